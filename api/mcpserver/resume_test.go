package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseEvent is one server-sent event as it came over the wire.
type sseEvent struct{ name, id, data string }

// readEvent reads the next event (up to its blank line); comments are
// skipped. io.EOF means the stream ended.
func readEvent(br *bufio.Reader) (sseEvent, error) {
	var e sseEvent
	seen := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return e, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if seen {
				return e, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			e.name, seen = strings.TrimSpace(line[len("event:"):]), true
		case strings.HasPrefix(line, "id:"):
			e.id, seen = strings.TrimSpace(line[len("id:"):]), true
		case strings.HasPrefix(line, "data:"):
			e.data, seen = strings.TrimSpace(line[len("data:"):]), true
		}
	}
}

// eventIndex splits an SDK event id, <stream>_<index>.
func eventIndex(t *testing.T, id string) (string, int) {
	t.Helper()
	stream, idx, ok := strings.Cut(id, "_")
	n, err := strconv.Atoi(idx)
	if !ok || err != nil {
		t.Fatalf("event id %q is not <stream>_<index>", id)
	}
	return stream, n
}

// openSSE sends a request and returns its event stream.
func openSSE(t *testing.T, method, url string, header http.Header, body string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, err := http.DefaultClient.Do(mcpRequest(method, url, header, body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	return resp, bufio.NewReader(resp.Body)
}

// A 2025-11-25 call whose SSE connection drops goes on running; the client
// GETs the stream again with Last-Event-ID and receives everything it
// missed — progress sent while it was away, then the result — exactly
// once, whether it comes back while the call runs or after it answered.
func TestHTTPResumeDroppedCallStream(t *testing.T) {
	for _, when := range []string{"while running", "after the answer"} {
		t.Run(when, func(t *testing.T) {
			release := make(chan struct{})
			b := newFake(tool("slow", `{"type":"object"}`))
			b.answerCtx("slow", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
				select {
				case <-release:
					return json.RawMessage(`{"slow":"done"}`), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			})
			s := New(b, "dev")
			defer s.Close()
			s.progressEvery = 20 * time.Millisecond
			store := newEventStore(0, 0)
			srv := httptest.NewServer(s.Handler(HTTPOptions{events: store}))
			defer srv.Close()
			defer s.CloseSessions()
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			defer free() // a failed test must not leave the call waiting

			resp, body := postMCP(t, srv.URL, nil, legacyInitialize)
			sid := resp.Header.Get("Mcp-Session-Id")
			if resp.StatusCode != http.StatusOK || sid == "" {
				t.Fatalf("initialize: %d %s", resp.StatusCode, body)
			}
			h := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}
			postMCP(t, srv.URL, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

			const call = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"tok"}}}`
			resp, br := openSSE(t, http.MethodPost, srv.URL, h, call)
			var events []sseEvent
			for {
				e, err := readEvent(br)
				if err != nil {
					t.Fatalf("call stream ended before its first progress: %v (events %v)", err, events)
				}
				events = append(events, e)
				if strings.Contains(e.data, "notifications/progress") {
					break
				}
			}
			resp.Body.Close() // the connection drops mid-call
			last := events[len(events)-1].id
			stream, lastIdx := eventIndex(t, last)

			// While the client is away, the call goes on sending progress.
			waitUntil(t, "progress stored while the client is away", func() bool {
				held, err := store.after(sid, stream, lastIdx)
				return err == nil && len(held) >= 2
			})
			if when == "after the answer" {
				free()
				waitUntil(t, "the answer stored", func() bool {
					store.mu.Lock()
					defer store.mu.Unlock()
					held := store.sessions[sid][stream]
					return held != nil && held.answered
				})
			}

			resumed := h.Clone()
			resumed.Set("Last-Event-ID", last)
			resp, br = openSSE(t, http.MethodGet, srv.URL, resumed, "")
			defer resp.Body.Close()
			if when == "while running" {
				free()
			}
			for {
				e, err := readEvent(br)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("resumed stream: %v", err)
				}
				events = append(events, e)
			}

			answers, progress := 0, 0
			prev := -1
			for i, e := range events {
				s, idx := eventIndex(t, e.id)
				if s != stream || idx != prev+1 {
					t.Fatalf("event %d has id %q after index %d: want %s_%d (every event once, in order)", i, e.id, prev, stream, prev+1)
				}
				prev = idx
				var msg struct {
					ID     *int            `json:"id"`
					Method string          `json:"method"`
					Result json.RawMessage `json:"result"`
				}
				if e.data == "" {
					continue // the priming event
				}
				if err := json.Unmarshal([]byte(e.data), &msg); err != nil {
					t.Fatalf("event %q: %v", e.data, err)
				}
				switch {
				case msg.Method == "notifications/progress":
					progress++
				case msg.ID != nil && *msg.ID == 5:
					answers++
					if !strings.Contains(string(msg.Result), `"slow":"done"`) {
						t.Errorf("answer %s, want the call's result", msg.Result)
					}
				}
			}
			if answers != 1 {
				t.Errorf("the call's answer arrived %d times over both connections, want exactly once", answers)
			}
			if progress < 3 {
				t.Errorf("%d progress notifications in all; want those sent while the client was away too", progress)
			}
		})
	}
}

// 2026-07-28 has no resumption: a stateless call answers without event
// ids, and the store holds nothing of it.
func TestHTTPStatelessCallHasNoEventIDs(t *testing.T) {
	b := newFake(tool("echo", echoSchema))
	b.answer("echo", func([]byte) (json.RawMessage, error) { return json.RawMessage(`{"ok":true}`), nil })
	s := New(b, "dev")
	defer s.Close()
	store := newEventStore(0, 0)
	srv := httptest.NewServer(s.Handler(HTTPOptions{events: store}))
	defer srv.Close()

	h := http.Header{"Mcp-Protocol-Version": {statelessRevision}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"}}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":{%q:%q,%q:{"name":"raw","version":"0"},%q:{}}}}`,
		"io.modelcontextprotocol/protocolVersion", statelessRevision, "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities")
	resp, got := postMCP(t, srv.URL, h, body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(got, `{\"ok\":true}`) {
		t.Fatalf("stateless call: %d %s", resp.StatusCode, got)
	}
	if strings.Contains(got, "\nid:") || strings.HasPrefix(got, "id:") || strings.Contains(got, "event: prime") {
		t.Errorf("stateless answer carries event ids (resumption is 2025-11-25 only):\n%s", got)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.count != 0 || store.bytes != 0 {
		t.Errorf("the store holds %d streams, %d bytes after a stateless call; want none", store.count, store.bytes)
	}
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
