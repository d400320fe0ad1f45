package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolhost/toolhost/host"
)

// rawStdio runs Run over pipes and lets a test write raw lines and read
// the server's lines one by one.
type rawStdio struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

func startRaw(t *testing.T, s *Server) *rawStdio {
	t.Helper()
	return startRawCtx(t, s, context.Background())
}

// startRawCtx is startRaw with Run's context: its end stops the server.
func startRawCtx(t *testing.T, s *Server, parent context.Context) *rawStdio {
	t.Helper()
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	r := &rawStdio{t: t, in: cw, lines: make(chan string, 100), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(parent)
	go func() { r.done <- s.Run(ctx, sr, sw) }()
	go func() {
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() {
		cw.Close()
		cancel()
		<-r.done
	})
	return r
}

func (r *rawStdio) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// next returns the next message the server wrote, decoded.
func (r *rawStdio) next() map[string]any {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatal("server closed its output; want it to go on")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			r.t.Fatalf("server wrote %q, not JSON: %v", line, err)
		}
		return m
	case <-time.After(10 * time.Second):
		r.t.Fatal("no answer within 10s")
	}
	return nil
}

func (r *rawStdio) initialize() {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := r.next(); m["id"] != "init" || m["result"] == nil {
		r.t.Fatalf("initialize answered %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// One bad line must cost the client one error response, never the session:
// every kind of bad input is answered and the next call still works.
func TestStdioSurvivesBadLines(t *testing.T) {
	b := newFake(tool("echo", echoSchema))
	b.answer("echo", func([]byte) (json.RawMessage, error) { return json.RawMessage(`{"ok":1}`), nil })
	s := New(b, "dev")
	defer s.Close()
	r := startRaw(t, s)
	r.initialize()

	huge := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", maxStdioLine) + `"}}}`
	tests := []struct {
		name     string
		line     string
		wantCode float64
		wantID   any
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700, nil},
		{"binary garbage", "\x00\xff\xfe garbage", -32700, nil},
		{"over the line cap", huge, -32600, nil},
		{"batch", `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -32600, nil},
		{"wrong version tag keeps its id", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, -32600, float64(3)},
		{"bare value", `42`, -32600, nil},
		{"bad id type", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.t = t
			r.send(tt.line)
			m := r.next()
			if errorCode(m) != tt.wantCode || m["id"] != tt.wantID {
				t.Errorf("answer = %v, want error %v with id %v", m, tt.wantCode, tt.wantID)
			}
			if _, ok := m["id"]; !ok {
				t.Errorf("answer %v has no id member; JSON-RPC wants id null when unknown", m)
			}
			// The session goes on: a call still works.
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}`, 100+i))
			if m := r.next(); m["id"] != float64(100+i) || m["result"] == nil {
				t.Errorf("call after the bad line answered %v", m)
			}
		})
	}
	r.t = t
	// Blank lines are not messages and get no answer.
	r.send("")
	r.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if m := r.next(); m["id"] != "p" {
		t.Errorf("after a blank line: %v, want the ping's answer", m)
	}
}

// notifications/cancelled stops the call (its ctx ends) and, over stdio,
// the cancelled request gets no response at all.
func TestStdioCancelledCallGetsNoResult(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan host.Entry, 1)
	b := newFake(tool("slow", `{"type":"object"}`))
	b.answerCtx("slow", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		close(started)
		select {
		case <-ctx.Done():
			ended <- host.EntryOf(ctx)
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return json.RawMessage(`"finished anyway"`), nil
		}
	})
	s := New(b, "dev")
	defer s.Close()
	r := startRaw(t, s)
	r.initialize()

	r.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	<-started
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user pressed stop"}}`)
	select {
	case e := <-ended:
		if e != host.EntryMCPStdio {
			t.Errorf("call entry = %q, want %q", e, host.EntryMCPStdio)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call's ctx was not cancelled within 5s of notifications/cancelled")
	}
	r.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	// The cancelled call's handler has returned; a response for it would be
	// written right after. Collect what arrives for a generous second.
	var got []any
	window := time.After(time.Second)
collect:
	for {
		select {
		case line := <-r.lines:
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("server wrote %q: %v", line, err)
			}
			got = append(got, m["id"])
		case <-window:
			break collect
		}
	}
	if len(got) != 1 || got[0] != float64(8) {
		t.Errorf("responses after the cancel: ids %v, want only 8 (none for the cancelled 7)", got)
	}
}

// A cancel for a request that already finished, or never existed, changes
// nothing.
func TestStdioLateCancelIsHarmless(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	r := startRaw(t, s)
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if m := r.next(); m["id"] != float64(1) {
		t.Fatalf("ping answered %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := r.next(); m["id"] != float64(2) || m["result"] == nil {
		t.Errorf("ping after a late cancel answered %v", m)
	}
}

// FuzzLineConn feeds arbitrary client bytes to the stdio connection: it
// must never panic, must hand on only decoded messages, and everything it
// writes back must be JSON lines.
func FuzzLineConn(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"))
	f.Add([]byte("not json\n[1,2]\n{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"x\"}\r\n"))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n" + strings.Repeat("y", 300)))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out strings.Builder
		tr := &lineTransport{r: io.NopCloser(strings.NewReader(string(in))), w: nopWriteCloser{&out}, maxLine: 128}
		conn, err := tr.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := conn.Read(context.Background())
			if err != nil {
				break
			}
			if msg == nil {
				t.Fatal("Read returned neither a message nor an error")
			}
			// Answer calls so that cancellation bookkeeping runs too (and
			// the end of the input, which waits for the answers, comes).
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				_ = conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
			}
		}
		conn.Close()
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("wrote a line that is not JSON: %q", line)
			}
		}
	})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// A client that writes its requests and closes its end (`printf … |
// toolhost mcp`) reads every answer before the server's output ends, even
// those of calls still running when the input ended.
func TestStdioAnswersBeforeEndOfInput(t *testing.T) {
	b := newFake(tool("echo", echoSchema))
	b.answer("echo", func([]byte) (json.RawMessage, error) {
		time.Sleep(300 * time.Millisecond)
		return json.RawMessage(`{"echo":true}`), nil
	})
	s := New(b, "dev")
	defer s.Close()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"initialize"}`,
	}, "\n") + "\n"
	var out strings.Builder
	if err := s.Run(context.Background(), io.NopCloser(strings.NewReader(in)), nopWriteCloser{&out}); err != nil {
		t.Logf("Run: %v", err)
	}
	answered := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("server wrote %q: %v", line, err)
		}
		if id, ok := m["id"].(float64); ok {
			answered[id] = true
		}
	}
	for _, id := range []float64{1, 2, 3, 4} {
		if !answered[id] {
			t.Errorf("request %v was not answered before the output ended; the server wrote:\n%s", id, out.String())
		}
	}
}

// A request the client cancelled is answered by no one, so the end of the
// input does not wait for it.
func TestStdioEndOfInputAfterCancel(t *testing.T) {
	b := newFake(tool("slow", `{"type":"object"}`))
	b.answerCtx("slow", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return json.RawMessage(`"finished anyway"`), nil
		}
	})
	s := New(b, "dev")
	defer s.Close()
	sr, cw := io.Pipe()
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), sr, nopWriteCloser{&out}) }()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
	} {
		io.WriteString(cw, line+"\n")
	}
	time.Sleep(200 * time.Millisecond) // the call is running
	io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`+"\n")
	cw.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Run did not end within 10s of the input's end after the only call was cancelled; wrote:\n%s", out.String())
	}
	if strings.Contains(out.String(), `"id":7`) {
		t.Errorf("the cancelled call was answered:\n%s", out.String())
	}
}
