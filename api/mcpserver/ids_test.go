package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// requestIDs are ids of every JSON type and number shape: the accepted
// ones must come back exactly as sent; the SDK reads number ids as float64
// and answers under their int64 value, so 1.5 came back as 1 and 1e300 as
// -9223372036854775808 — a client waiting for its id never saw its answer.
var requestIDs = []struct {
	id       string
	accepted bool
}{
	{`7`, true},
	{`0`, true},
	{`-3`, true},
	{`9007199254740991`, true},
	{`-9007199254740991`, true},
	{`"abc"`, true},
	{`""`, true},
	{`1.5`, false},
	{`1.0`, false},
	{`1e2`, false},
	{`-0.5`, false},
	{`9007199254740992`, false},
	{`9007199254740993`, false},
	{`-9007199254740993`, false},
	{`12345678901234567890123`, false},
	{`1e300`, false},
}

func TestStdioAnswersUnderTheIDSent(t *testing.T) {
	b := newFake(tool("held", `{"type":"object"}`))
	started, release := make(chan struct{}), make(chan struct{})
	b.answerCtx("held", func(context.Context, []byte) (json.RawMessage, error) {
		close(started)
		<-release
		return json.RawMessage(`"done"`), nil
	})
	s := New(b, "dev")
	defer s.Close()
	r := startRaw(t, s)
	done := sync.OnceFunc(func() { close(release) })
	t.Cleanup(done) // before Run's end, which waits for the call
	r.initialize()
	for _, tc := range requestIDs {
		r.send(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"ping"}`)
		checkAnsweredID(t, tc.id, tc.accepted, r.nextRaw())
	}
	// A request whose id is in flight is refused without the id (which
	// would read as the first request's answer), and the first is answered
	// once.
	r.send(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"held","arguments":{}}}`)
	<-started
	r.send(`{"jsonrpc":"2.0","id":"dup","method":"ping"}`)
	line := r.nextRaw()
	done()
	var dupAnswers, nullRefusals int
	for i := range 2 {
		if i == 1 {
			line = r.nextRaw()
		}
		switch {
		case strings.Contains(line, `"id":"dup"`):
			dupAnswers++
		case strings.Contains(line, `"id":null`) && strings.Contains(line, "not yet answered"):
			nullRefusals++
		}
	}
	if dupAnswers != 1 || nullRefusals != 1 {
		t.Errorf("two requests with id \"dup\": %d answers under it and %d refusals with id null, want 1 and 1", dupAnswers, nullRefusals)
	}
}

func TestHTTPAnswersUnderTheIDSent(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()
	session := openSession(t, srv.URL)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	stateless := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/list"}}
	for _, tc := range requestIDs {
		t.Run("session "+tc.id, func(t *testing.T) {
			_, body := postMCP(t, srv.URL, session, `{"jsonrpc":"2.0","id":`+tc.id+`,"method":"ping"}`)
			checkAnsweredID(t, tc.id, tc.accepted, sseData(body))
		})
		t.Run("stateless "+tc.id, func(t *testing.T) {
			_, body := postMCP(t, srv.URL, stateless, `{"jsonrpc":"2.0","id":`+tc.id+`,"method":"tools/list","params":{`+meta+`}}`)
			checkAnsweredID(t, tc.id, tc.accepted, sseData(body))
		})
	}
	// A batch (sessions before 2025-06-18) is refused as a whole when one
	// of its requests has such an id.
	resp, body := postMCP(t, srv.URL, session, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2.5,"method":"ping"}]`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "2.5") {
		t.Errorf("batch with id 2.5: %d %s, want 400 naming the id", resp.StatusCode, body)
	}
}

// checkAnsweredID checks the answer to a request with id: the same id, or
// for a refused one -32600 with id null saying what ids to use.
func checkAnsweredID(t *testing.T, id string, accepted bool, answer string) {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(answer), &m); err != nil {
		t.Fatalf("id %s: answer %q: %v", id, answer, err)
	}
	if accepted {
		if string(m.ID) != id || m.Error != nil {
			t.Errorf("id %s: answered %s, want a result under the same id", id, answer)
		}
		return
	}
	if string(m.ID) != "null" || m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "use a string id") {
		t.Errorf("id %s: answered %s, want -32600 with id null saying which ids to use", id, answer)
	}
}

// sseData is the JSON-RPC message of a POST's answer, an event stream or
// plain JSON.
func sseData(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, "data: "); ok && strings.TrimSpace(rest) != "" {
			return rest
		}
	}
	return strings.TrimSpace(body)
}

// nextRaw returns the next line the server wrote, as written.
func (r *rawStdio) nextRaw() string {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatal("server closed its output; want it to go on")
		}
		return line
	case <-time.After(10 * time.Second):
		r.t.Fatal("no answer within 10s")
	}
	return ""
}
