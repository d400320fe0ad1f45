//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but still part of both revisions we serve; clients that ask for lines get them

package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/toolerr"
)

// logSink collects the notifications/message a client receives.
type logSink struct {
	mu    sync.Mutex
	lines []*mcp.LoggingMessageParams
	got   chan struct{}
}

func newLogSink() *logSink { return &logSink{got: make(chan struct{}, 100)} }

func (l *logSink) handler(_ context.Context, req *mcp.LoggingMessageRequest) {
	l.mu.Lock()
	l.lines = append(l.lines, req.Params)
	l.mu.Unlock()
	l.got <- struct{}{}
}

// await waits for n lines in all, then returns them as "level tool code: message".
func (l *logSink) await(t *testing.T, n int) []string {
	t.Helper()
	for {
		l.mu.Lock()
		have := len(l.lines)
		l.mu.Unlock()
		if have >= n {
			break
		}
		select {
		case <-l.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d log lines within 10 s, want %d", have, n)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.lines {
		raw, _ := json.Marshal(p.Data)
		var d callLine
		if err := json.Unmarshal(raw, &d); err != nil || p.Logger != "toolhost" {
			t.Fatalf("log line %s from %q is not a toolhost call line", raw, p.Logger)
		}
		out = append(out, string(p.Level)+" "+d.Tool+" "+d.Code+": "+d.Message)
	}
	return out
}

// A session that set a log level hears how its calls start and end, at
// the level their outcome deserves; one that set none hears nothing.
func TestCallLogNotifications(t *testing.T) {
	b := newFake(tool("ok", `{"type":"object"}`), tool("nope", `{"type":"object"}`), tool("slow", `{"type":"object"}`))
	b.answer("ok", func([]byte) (json.RawMessage, error) { return json.RawMessage(`"done"`), nil })
	b.answer("nope", func([]byte) (json.RawMessage, error) {
		return nil, toolerr.Errorf(toolerr.CodeDenied, "policy denies nope")
	})
	b.answer("slow", func([]byte) (json.RawMessage, error) {
		return nil, toolerr.Errorf(toolerr.CodeTimeout, "the call ran past its 1000 ms limit")
	})
	s := New(b, "1")
	defer s.Close()
	ctx := context.Background()

	if caps := connectAt(t, s, "stdio", "2025-11-25", nil).InitializeResult().Capabilities; caps.Logging == nil {
		t.Errorf("capabilities %+v do not declare logging", caps)
	}

	sink := newLogSink()
	// 2025-11-25: the level is the session's (logging/setLevel).
	cs := connectAt(t, s, "stdio", "2025-11-25", &mcp.ClientOptions{LoggingMessageHandler: sink.handler})
	for _, name := range []string{"ok", "nope"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ok", "nope", "slow"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	got := sink.await(t, 6)
	want := []string{
		"debug ok : call started", "debug ok : call answered",
		"debug nope : call started", "warning nope denied: call denied",
		"debug slow : call started", "warning slow timeout: call hit a limit",
	}
	if len(got) != len(want) {
		t.Fatalf("log lines:\n%s\nwant the 6 lines of the calls after setLevel", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[3], "policy denies nope") || !strings.Contains(got[5], "1000 ms limit") {
		t.Errorf("denial and limit lines do not carry the reason: %q, %q", got[3], got[5])
	}

	// At "warning" the debug lines are filtered out.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ok", "nope"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if got := sink.await(t, 7); len(got) != 7 || !strings.HasPrefix(got[6], "warning nope denied") {
		t.Errorf("at level warning the lines are:\n%s\nwant only the denial added", strings.Join(got, "\n"))
	}
}

// On 2026-07-28 the level comes with each request (_meta logLevel).
func TestCallLogPerRequestLevel(t *testing.T) {
	b := newFake(tool("ok", `{"type":"object"}`))
	b.answer("ok", func([]byte) (json.RawMessage, error) { return json.RawMessage(`"done"`), nil })
	s := New(b, "1")
	defer s.Close()
	sink := newLogSink()
	cs := connectAt(t, s, "stdio", "2026-07-28", &mcp.ClientOptions{LoggingMessageHandler: sink.handler})
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ok"}); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	early := len(sink.lines)
	sink.mu.Unlock()
	if early != 0 {
		t.Errorf("a call without a log level got %d log lines", early)
	}
	p := &mcp.CallToolParams{Name: "ok", Meta: mcp.Meta{mcp.MetaKeyLogLevel: "debug"}}
	if _, err := cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := sink.await(t, 2); len(got) != 2 || !strings.HasPrefix(got[0], "debug ok : call started") || !strings.HasPrefix(got[1], "debug ok : call answered") {
		t.Errorf("log lines:\n%s\nwant the two lines of the call that asked for debug only", strings.Join(got, "\n"))
	}
}

// Each session gets at most logBurst lines per window; the next window
// starts afresh, and one session's flood does not use up another's.
func TestLogLimiter(t *testing.T) {
	var l logLimiter
	a, b := new(mcp.ServerSession), new(mcp.ServerSession)
	now := time.Unix(1000, 0)
	sent := 0
	for i := 0; i < 3*logBurst; i++ {
		if l.allow(a, now.Add(time.Duration(i)*time.Millisecond)) {
			sent++
		}
	}
	if sent != logBurst {
		t.Errorf("sent %d lines in one window, want %d", sent, logBurst)
	}
	if !l.allow(b, now) {
		t.Error("another session was limited by the first one's flood")
	}
	if !l.allow(a, now.Add(logWindow)) {
		t.Error("the next window did not start afresh")
	}
}
