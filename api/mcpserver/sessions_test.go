package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// openSession initializes a 2025-11-25 session and returns its headers.
func openSession(t *testing.T, url string) http.Header {
	t.Helper()
	resp, body := postMCP(t, url, nil, legacyInitialize)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	h := http.Header{"Mcp-Session-Id": {id}, "Mcp-Protocol-Version": {"2025-11-25"}}
	postMCP(t, url, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h
}

// A client that deletes its session has gone: the calls running in it
// are cancelled, and the DELETE does not wait for them to end on their
// own (a call waiting for a person would hold it for minutes).
func TestHTTPDeleteSessionCancelsItsCalls(t *testing.T) {
	b := newFake(tool("slow", `{"type":"object"}`))
	started, ended := make(chan struct{}), make(chan error, 1)
	b.answerCtx("slow", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		close(started)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			ended <- nil
			return json.RawMessage(`"finished"`), nil
		}
	})
	s := New(b, "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()
	h := openSession(t, srv.URL)
	go func() {
		resp, err := http.DefaultClient.Do(mcpRequest(http.MethodPost, srv.URL, h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	start := time.Now()
	resp, err := http.DefaultClient.Do(mcpRequest(http.MethodDelete, srv.URL, h, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("DELETE waited %v for the session's call", waited)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the call ran to its end after its session was deleted")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call still runs 10 s after its session was deleted")
	}
}

// Sessions are bounded: an initialize beyond MaxSessions gets 503 with a
// JSON-RPC error that says what to do, and a session that ends makes room.
func TestHTTPSessionsBounded(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{MaxSessions: 3}))
	defer srv.Close()
	var first http.Header
	for i := range 3 {
		h := openSession(t, srv.URL)
		if i == 0 {
			first = h
		}
	}
	for _, id := range []string{`1`, `"init-4"`} {
		resp, body := postMCP(t, srv.URL, nil, strings.Replace(legacyInitialize, `"id":1`, `"id":`+id, 1))
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"error"`) || !strings.Contains(body, "DELETE /mcp") {
			t.Fatalf("a fourth session: %d %s", resp.StatusCode, body)
		}
		// The refusal answers the initialize: under its id.
		if !strings.Contains(body, `"id":`+id+`,`) {
			t.Errorf("the refused initialize with id %s was answered %s, not under its id", id, body)
		}
	}
	if r, err := http.DefaultClient.Do(mcpRequest(http.MethodDelete, srv.URL, first, "")); err != nil {
		t.Fatal(err)
	} else {
		r.Body.Close()
	}
	openSession(t, srv.URL)
}
