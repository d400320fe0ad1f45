//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but still part of both revisions we serve; clients that ask for lines get them

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// These tests drive the call's event sink from the backend (as the engine
// does while a plugin runs); the engines' side is pinned by enginetest and
// the whole path, real plugin and workers included, by test/e2e.

// clientEvents collects the plugin lines and progress a client hears.
type clientEvents struct {
	mu       sync.Mutex
	lines    []*mcp.LoggingMessageParams
	progress []*mcp.ProgressNotificationParams
}

func (c *clientEvents) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if r.Params.Logger != "toolhost" {
				c.lines = append(c.lines, r.Params)
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.progress = append(c.progress, r.Params)
		},
	}
}

// settle waits until what the client heard stops changing (the client may
// hand notifications to its handlers after the result), then returns it.
func (c *clientEvents) settle() ([]*mcp.LoggingMessageParams, []*mcp.ProgressNotificationParams) {
	last := -1
	for range 50 {
		c.mu.Lock()
		n := len(c.lines) + len(c.progress)
		c.mu.Unlock()
		if n == last {
			break
		}
		last = n
		time.Sleep(50 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	lines, progress := c.lines, c.progress
	c.lines, c.progress = nil, nil
	return lines, progress
}

// eventsBackend answers "work" by reporting through the call's sink what
// a plugin would: three lines at three levels and three progress reports.
func eventsBackend(wantSink chan<- bool) *fakeBackend {
	b := newFake(tool("work", `{"type":"object"}`))
	b.answerCtx("work", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		ev := host.CallEventsOf(ctx)
		wantSink <- ev != nil
		if ev != nil {
			if ev.LogLevel() <= host.LogDebug {
				ev.Log(host.LogDebug, "debug detail")
			}
			ev.Log(host.LogInfo, "item 1 of 2")
			ev.Log(host.LogWarn, "item 2 looks odd")
			ev.Progress(host.Progress{Progress: 0, Total: 2, Message: "begin"})
			ev.Progress(host.Progress{Progress: 1, Total: 2, Message: "item 1"})
			ev.Progress(host.Progress{Progress: 2, Total: 2, Message: "item 2"})
		}
		return json.RawMessage(`"done"`), nil
	})
	return b
}

// A client hears the plugin's lines at the level it set (logger: the
// plugin), on both transports and both revisions; a call whose client
// asked for neither lines nor progress gets no sink at all.
func TestPluginLogLines(t *testing.T) {
	sinks := make(chan bool, 100)
	s := New(eventsBackend(sinks), "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()
	ctx := context.Background()
	for _, where := range []string{"stdio", srv.URL} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(fmt.Sprintf("%s/%s", strings.TrimPrefix(where, "http://"), version), func(t *testing.T) {
				var got clientEvents
				cs := connectAt(t, s, where, version, got.options())
				call := func(level string) {
					t.Helper()
					p := &mcp.CallToolParams{Name: "work"}
					if level != "" && version == "2026-07-28" {
						p.Meta = mcp.Meta{mcp.MetaKeyLogLevel: level}
					} else if level != "" {
						if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
							t.Fatal(err)
						}
					}
					if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
						t.Fatalf("call: %v %+v", err, res)
					}
				}
				call("")
				if lines, progress := got.settle(); len(lines)+len(progress) != 0 || <-sinks {
					t.Fatalf("a client that asked for nothing heard %d lines, %d progress (or the call had a sink)", len(lines), len(progress))
				}
				call("info")
				lines, progress := got.settle()
				if !<-sinks {
					t.Fatal("a client at info: the call had no sink")
				}
				var seen []string
				for _, l := range lines {
					seen = append(seen, fmt.Sprintf("%s %s %v", l.Logger, l.Level, l.Data))
				}
				if want := "p info item 1 of 2|p warning item 2 looks odd"; strings.Join(seen, "|") != want {
					t.Errorf("lines at info: %q, want %q", seen, want)
				}
				if len(progress) != 0 {
					t.Errorf("%d progress notifications without a progress token", len(progress))
				}
				call("error")
				if lines, _ := got.settle(); len(lines) != 0 || !<-sinks {
					t.Errorf("at error the client heard %d plugin lines (none are errors)", len(lines))
				}
			})
		}
	}
}

// The tool's own progress joins the heartbeat in one increasing stream:
// started, the tool's reports with their total, finished.
func TestPluginProgress(t *testing.T) {
	sinks := make(chan bool, 100)
	s := New(eventsBackend(sinks), "dev")
	defer s.Close()
	var got clientEvents
	cs := connectAt(t, s, "stdio", "2025-11-25", got.options())
	p := &mcp.CallToolParams{Name: "work"}
	p.SetProgressToken("tok")
	if res, err := cs.CallTool(context.Background(), p); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	_, progress := got.settle()
	var msgs []string
	for i, n := range progress {
		msgs = append(msgs, fmt.Sprintf("%s %g/%g", n.Message, n.Progress, n.Total))
		if i > 0 && n.Progress <= progress[i-1].Progress {
			t.Errorf("progress %v after %v: must increase", n.Progress, progress[i-1].Progress)
		}
	}
	if len(progress) < 3 || progress[0].Message != "started" || progress[len(progress)-1].Message != "finished" {
		t.Fatalf("progress %q, want started … finished", msgs)
	}
	last := progress[len(progress)-2]
	if last.Message != "item 2" || last.Progress != 2 || last.Total != 2 {
		t.Errorf("progress %q: want the tool's last report (item 2, 2/2) before finished", msgs)
	}
	if fin := progress[len(progress)-1]; fin.Total != 2 || fin.Progress-2 > 1e-6 {
		t.Errorf("finished %g/%g, want the tool's total kept and the value raised by a hair", fin.Progress, fin.Total)
	}
}

// A plugin that floods its log does not hold up its call or the session:
// the client gets at most a burst of lines, the call answers at once.
func TestPluginLogFloodBounded(t *testing.T) {
	b := newFake(tool("flood", `{"type":"object"}`))
	b.answerCtx("flood", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		ev := host.CallEventsOf(ctx)
		for i := range 100_000 {
			ev.Log(host.LogInfo, fmt.Sprintf("line %d", i))
		}
		return json.RawMessage(`"flooded"`), nil
	})
	s := New(b, "dev")
	defer s.Close()
	var got clientEvents
	cs := connectAt(t, s, "stdio", "2025-11-25", got.options())
	ctx := context.Background()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "flood"}); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	took := time.Since(start)
	lines, _ := got.settle()
	if len(lines) == 0 || len(lines) > pluginLogBurst {
		t.Errorf("%d plugin lines from a flood of 100000, want 1..%d (one window's burst)", len(lines), pluginLogBurst)
	}
	// The drain waits at most pluginLogDrain; 100000 lines must not add
	// up to anything like the time sending them would take.
	if took > pluginLogDrain+5*time.Second {
		t.Errorf("the flooding call took %v", took)
	}
	t.Logf("flooding call answered in %v; client heard %d lines", took, len(lines))
}
