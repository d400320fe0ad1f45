package mcpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// postMCP sends one JSON-RPC message to an MCP endpoint and returns the
// response with its body read.
func postMCP(t *testing.T, url string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(mcpRequest(http.MethodPost, url, header, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// mcpRequest is a request to an MCP endpoint as a client sends it; an
// empty body sends none.
func mcpRequest(method, url string, header http.Header, body string) *http.Request {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body == "" {
		req.Body = nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	return req
}

const legacyInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// Clients that never DELETE their session must not leak: an idle session
// ends after SessionTimeout, and its id is then unknown (404, so the
// client starts a new one).
func TestHTTPIdleSessionsExpire(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	const timeout = 300 * time.Millisecond
	srv := httptest.NewServer(s.Handler(HTTPOptions{SessionTimeout: timeout}))
	defer srv.Close()

	const n = 20
	var ids []string
	for range n {
		resp, body := postMCP(t, srv.URL, nil, legacyInitialize)
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d %q, session %q", resp.StatusCode, body, id)
		}
		ids = append(ids, id)
	}
	if got := s.sessionCount(); got != n {
		t.Fatalf("sessions after %d initializes = %d", n, got)
	}
	deadline := time.Now().Add(timeout + 10*time.Second)
	for s.sessionCount() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle sessions still open 10s after their %v timeout", s.sessionCount(), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, _ := postMCP(t, srv.URL, http.Header{"Mcp-Session-Id": {ids[0]}, "Mcp-Protocol-Version": {"2025-11-25"}}, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("request on an expired session: status %d, want 404", resp.StatusCode)
	}
}

// A session in use stays: each request restarts its idle clock.
func TestHTTPActiveSessionStays(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	const timeout = time.Second
	srv := httptest.NewServer(s.Handler(HTTPOptions{SessionTimeout: timeout}))
	defer srv.Close()
	resp, _ := postMCP(t, srv.URL, nil, legacyInitialize)
	h := http.Header{"Mcp-Session-Id": {resp.Header.Get("Mcp-Session-Id")}, "Mcp-Protocol-Version": {"2025-11-25"}}
	postMCP(t, srv.URL, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := range 5 { // 1.5 s in all, past the timeout
		time.Sleep(300 * time.Millisecond)
		if resp, body := postMCP(t, srv.URL, h, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("ping %d on an active session: %d %s", i, resp.StatusCode, body)
		}
	}
}

// FuzzPeekRequest: routing reads a POST body and must hand the SDK the
// exact bytes, whatever they are, and never panic.
func FuzzPeekRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`), int64(1<<20))
	f.Add([]byte(`[{"method":1}]`), int64(4))
	f.Fuzz(func(t *testing.T, body []byte, max int64) {
		if max < 0 || max > 1<<20 {
			max = 1 << 10
		}
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body)))
		peekRequest(r, max)
		got, err := io.ReadAll(r.Body)
		if err != nil || string(got) != string(body) {
			t.Fatalf("body after peek = %q, %v; want %q", got, err, body)
		}
	})
}

// A protocol version header that is not a revision (a date) is refused as
// such, whatever it would compare as, with the spec's
// UnsupportedProtocolVersionError for that request: its id, the versions
// served and the one asked for (the conformance suite's v999.0.0 probe
// got -32600 with a null id before).
func TestHTTPProtocolVersionMustBeARevision(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()
	discover := `{"jsonrpc":"2.0","id":"d-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0"}}}`
	for _, v := range []string{"zzz", "latest", "v2", "v999.0.0", "2026-07-28x", strings.Repeat("9", 200)} {
		for _, req := range []struct{ body, id string }{{legacyInitialize, "1"}, {discover, `"d-1"`}} {
			resp, body := postMCP(t, srv.URL, http.Header{"Mcp-Protocol-Version": {v}}, req.body)
			var got struct {
				ID    json.RawMessage
				Error struct {
					Code    int
					Message string
					Data    struct {
						Supported []string
						Requested string
					}
				}
			}
			err := json.Unmarshal([]byte(body), &got)
			e := got.Error
			if err != nil || resp.StatusCode != http.StatusBadRequest || e.Code != mcp.CodeUnsupportedProtocolVersion ||
				string(got.ID) != req.id || !strings.Contains(e.Message, "not a protocol revision") ||
				!slices.Equal(e.Data.Supported, mcp.SupportedProtocolVersions()) || !strings.HasPrefix(v, strings.TrimSuffix(e.Data.Requested, "…")) || len(body) > 600 {
				t.Errorf("MCP-Protocol-Version %.20q: %d %s", v, resp.StatusCode, body)
			}
		}
	}
	if resp, body := postMCP(t, srv.URL, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, legacyInitialize); resp.StatusCode != http.StatusOK {
		t.Errorf("a revision: %d %s", resp.StatusCode, body)
	}
}
