package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/govern"
)

// startAsking serves delete_note, which always needs approval, to a raw
// stdio client that declares elicitation; the approvals are the host's.
func startAsking(t *testing.T, ctx context.Context) (*rawStdio, *govern.Approvals) {
	t.Helper()
	approvals := &govern.Approvals{Timeout: time.Minute}
	s := New(&askingBackend{fakeBackend: newFake(tool("delete_note", `{"type":"object"}`)), approvals: approvals}, "1")
	t.Cleanup(s.Close)
	r := startRawCtx(t, s, ctx)
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := r.next(); m["id"] != "init" || m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r, approvals
}

// callAndGetAsked sends tools/call delete_note and returns the id of the
// server's elicitation/create request.
func (r *rawStdio) callAndGetAsked(id int) json.RawMessage {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"delete_note","arguments":{"id":"n%d"}}}`, id, id))
	m := r.next()
	if m["method"] != "elicitation/create" || m["id"] == nil {
		r.t.Fatalf("want the server to ask for approval, got %v", m)
	}
	ask, _ := json.Marshal(m["id"])
	return ask
}

// noneWaiting fails the test unless no call waits for approval within 5 s.
func noneWaiting(t *testing.T, a *govern.Approvals, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(a.List()) > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the call still waits for approval (an operator could approve it and run it): %+v", what, a.List())
		}
	}
}

// When the client's answer to the approval request fails (an error, a
// result that is not an elicitation result, a form that does not
// validate), the call is denied (TestUnusableElicitationAnswerDenies), and
// it must not stay waiting where an operator could still approve and run
// it.
func TestStdioFailedElicitationEndsTheCall(t *testing.T) {
	r, approvals := startAsking(t, context.Background())
	for i, answer := range []string{
		`"error":{"code":-1,"message":"the user's client broke"}`,
		`"result":"garbage"`,
		`"result":{"action":"accept","content":{"approve":"yes please"}}`,
	} {
		id := 10 + i
		ask := r.callAndGetAsked(id)
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,%s}`, ask, answer))
		m := r.next()
		if m["id"] != float64(id) {
			t.Fatalf("answer %s: want the answer to call %d, got %v", answer, id, m)
		}
		if m["error"] == nil {
			// askingBackend answers a decision as a result: it must say
			// the call was not approved.
			res, _ := m["result"].(map[string]any)
			if sc, _ := res["structuredContent"].(map[string]any); res["isError"] != true && (sc == nil || sc["approved"] != false) {
				t.Fatalf("answer %s: the call was approved: %v", answer, m)
			}
		}
		noneWaiting(t, approvals, answer)
	}
}

// The end of the input while the server waits for the client's answer to
// an approval request ends the session at once (the answer can no longer
// come), not after the wait for unanswered requests.
func TestStdioEndOfInputDuringElicitation(t *testing.T) {
	r, approvals := startAsking(t, context.Background())
	r.callAndGetAsked(2)
	r.in.Close()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end within 10 s of the input's end while it waited for the client's answer")
	}
	noneWaiting(t, approvals, "end of input")
}

// Stopping the server (SIGTERM ends Run's context) while it waits for the
// client's answer ends Run: the SDK's Close waits for every handler, and
// this one waits for the client.
func TestStdioStopDuringElicitation(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	r, approvals := startAsking(t, ctx)
	r.callAndGetAsked(2)
	stop()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end within 10 s of its context while it waited for the client's answer")
	}
	noneWaiting(t, approvals, "stop")
}
