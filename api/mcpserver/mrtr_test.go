package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
)

// Host approvals reach the go-sdk's own client over HTTP in both protocol
// eras: on 2025-11-25 as a server-initiated elicitation, on 2026-07-28 as an
// input-required result (SEP-2322) that the client answers by retrying.
// The user's answer decides the call.
func TestApprovalOverHTTPBothRevisions(t *testing.T) {
	s, url, _ := askingHTTP(t, "delete_note")

	for _, version := range []string{"2025-11-25", statelessRevision} {
		t.Run(version, func(t *testing.T) {
			var asked []string
			opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				approve := strings.Contains(req.Params.Message, `"id":"1"`)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve, "reason": "checked"}}, nil
			}}
			cs := connectAt(t, s, url, version, opts)
			for _, tc := range []struct{ id, want string }{
				{"1", `{"approved":true,"by":"mcp-client","reason":"checked"}`},
				{"2", `{"approved":false,"by":"mcp-client","reason":"checked"}`},
			} {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"id": tc.id}})
				if err != nil {
					t.Fatal(err)
				}
				if got := textOf(res); got != tc.want {
					t.Errorf("call id %s: %s, want %s", tc.id, got, tc.want)
				}
			}
			if len(asked) != 2 || !strings.Contains(asked[0], "delete_note") || !strings.Contains(asked[0], `{"id":"1"}`) {
				t.Errorf("the user was asked %q; want two prompts naming the tool and its arguments", asked)
			}
		})
	}
}

// statelessCall sends one 2026-07-28 tools/call and returns the HTTP status
// and the JSON-RPC response (from a JSON body or the SSE stream).
func statelessCall(t *testing.T, url, tool string, params map[string]any) (int, map[string]any) {
	t.Helper()
	params["name"] = tool
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    statelessRevision,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "raw", "version": "0"},
		mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	h := http.Header{"Mcp-Protocol-Version": {statelessRevision}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}}
	resp, err := http.DefaultClient.Do(mcpRequest(http.MethodPost, url, h, string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	text := string(raw)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(text, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id":1`) {
				text = d
			}
		}
	}
	var msg map[string]any
	if err := json.Unmarshal([]byte(text), &msg); err != nil {
		t.Fatalf("response %d %q: %v", resp.StatusCode, raw, err)
	}
	return resp.StatusCode, msg
}

func resultOf(t *testing.T, msg map[string]any) map[string]any {
	t.Helper()
	r, ok := msg["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", msg)
	}
	return r
}

// The requestState of an approval is checked: a state that was altered,
// used already, or sent with another tool or other arguments is a JSON-RPC
// invalid-params error (HTTP 400) and leaves the parked call waiting for
// its own caller; a retry without an answer is asked again; the right
// retry gets the call's result.
func TestMRTRApprovalStateChecked(t *testing.T) {
	_, url, approvals := askingHTTP(t, "delete_note", "delete_all")

	args := map[string]any{"id": "7"}
	status, msg := statelessCall(t, url, "delete_note", map[string]any{"arguments": args})
	first := resultOf(t, msg)
	state, _ := first["requestState"].(string)
	ask, _ := first["inputRequests"].(map[string]any)[approvalKey].(map[string]any)
	if status != http.StatusOK || first["resultType"] != "input_required" || ask["method"] != "elicitation/create" || len(state) < 20 {
		t.Fatalf("first call: %d %v; want an input_required result asking for approval with a requestState", status, msg)
	}
	approve := map[string]any{approvalKey: map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}

	refused := func(name, tool string, params map[string]any) {
		t.Helper()
		status, msg := statelessCall(t, url, tool, params)
		e, _ := msg["error"].(map[string]any)
		if status != http.StatusBadRequest || e["code"] != float64(-32602) || !strings.Contains(e["message"].(string), "requestState") {
			t.Errorf("%s: %d %v; want 400 with -32602 naming requestState", name, status, msg)
		}
		if n := len(approvals.List()); n != 1 {
			t.Errorf("%s: %d approvals pending, want the parked call still waiting", name, n)
		}
	}
	refused("altered state", "delete_note", map[string]any{"arguments": args, "requestState": state + "-TAMPERED", "inputResponses": approve})
	refused("state of another tool's call", "delete_all", map[string]any{"arguments": args, "requestState": state, "inputResponses": approve})
	refused("other arguments", "delete_note", map[string]any{"arguments": map[string]any{"id": "8"}, "requestState": state, "inputResponses": approve})

	_, msg = statelessCall(t, url, "delete_note", map[string]any{"arguments": args, "requestState": state, "inputResponses": map[string]any{"wrong_key": map[string]any{"action": "accept", "content": map[string]any{}}}})
	if again := resultOf(t, msg); again["resultType"] != "input_required" || again["requestState"] != state {
		t.Errorf("retry without an answer: %v; want the same approval asked again", msg)
	}

	_, msg = statelessCall(t, url, "delete_note", map[string]any{"arguments": map[string]any{"id": "7"}, "requestState": state, "inputResponses": approve})
	done := resultOf(t, msg)
	content, _ := done["content"].([]any)
	if done["resultType"] != "complete" || len(content) != 1 || !strings.Contains(content[0].(map[string]any)["text"].(string), `"approved":true`) {
		t.Errorf("answered retry: %v; want the approved call's result", msg)
	}
	refused = func(name, tool string, params map[string]any) {
		t.Helper()
		status, msg := statelessCall(t, url, tool, params)
		if e, _ := msg["error"].(map[string]any); status != http.StatusBadRequest || e["code"] != float64(-32602) {
			t.Errorf("%s: %d %v; want 400 with -32602", name, status, msg)
		}
	}
	refused("state used twice", "delete_note", map[string]any{"arguments": args, "requestState": state, "inputResponses": approve})
}

// A call that waited for the user's approval keeps its events: the
// plugin's lines and progress after the approval reach the client (they
// used to go to the first request, already answered), and the client's
// progress token sees one rising sequence with one "finished", at the end
// (the first request no longer says "finished" when the call is parked).
func TestApprovedCallKeepsItsEvents(t *testing.T) {
	approvals := &govern.Approvals{Timeout: time.Minute}
	b := newFake(tool("work", `{"type":"object"}`))
	b.answerCtx("work", func(ctx context.Context, args []byte) (json.RawMessage, error) {
		if _, err := approvals.Ask(ctx, govern.Pending{Tool: "work", Plugin: "p", Arguments: args}); err != nil {
			return nil, err
		}
		ev := host.CallEventsOf(ctx)
		if ev == nil {
			return nil, errors.New("no sink after the approval")
		}
		ev.Log(host.LogInfo, "item 1 of 2")
		ev.Log(host.LogWarn, "item 2 looks odd")
		ev.Progress(host.Progress{Progress: 1, Total: 2, Message: "item 1"})
		ev.Progress(host.Progress{Progress: 2, Total: 2, Message: "item 2"})
		return json.RawMessage(`"done"`), nil
	})
	s := New(b, "1")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()
	defer s.CloseSessions()
	for _, where := range []string{"stdio", srv.URL} {
		for _, version := range []string{"2025-11-25", statelessRevision} {
			t.Run(strings.TrimPrefix(where, "http://")+"/"+version, func(t *testing.T) {
				var got clientEvents
				opts := got.options()
				opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}
				cs := connectAt(t, s, where, version, opts)
				p := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{"n": 2}}
				p.SetProgressToken("tok-" + version)
				// Logging is deprecated as of 2026-07-28 (SEP-2577) but still
				// served in its deprecation window, which this test covers.
				if version == statelessRevision {
					p.Meta[mcp.MetaKeyLogLevel] = "info" //lint:ignore SA1019 served during the deprecation window
				} else {
					//lint:ignore SA1019 served during the deprecation window
					if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
						t.Fatal(err)
					}
				}
				res, err := cs.CallTool(context.Background(), p)
				if err != nil || res.IsError || textOf(res) != "done" {
					t.Fatalf("call: %v %s", err, textOf(res))
				}
				lines, progress := got.settle()
				var texts []string
				for _, l := range lines {
					texts = append(texts, fmt.Sprint(l.Data))
				}
				if !slices.Contains(texts, "item 1 of 2") || !slices.Contains(texts, "item 2 looks odd") {
					t.Errorf("lines after the approval: %q", texts)
				}
				var msgs []string
				finished := 0
				for i, pr := range progress {
					msgs = append(msgs, pr.Message)
					if pr.Message == "finished" {
						finished++
					}
					if i > 0 && !(pr.Progress > progress[i-1].Progress) {
						t.Errorf("progress %d (%v %q) does not rise after %v", i, pr.Progress, pr.Message, progress[i-1].Progress)
					}
				}
				if !slices.Contains(msgs, "item 2") || finished != 1 || msgs[len(msgs)-1] != "finished" {
					t.Errorf("progress messages: %q", msgs)
				}
			})
		}
	}
}
