//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but still part of both revisions we serve; clients that ask for lines get them

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A plugin's own log lines (pdk.Log) and progress (toolhost.progress) reach
// an MCP client that asked for them, from a real plugin in real worker
// processes: over stdio (`toolhost mcp`, standalone and in front of a
// running serve) and over HTTP (`toolhost serve`). A client that did not
// ask hears nothing.
func TestMCPPluginEventsThroughWorkers(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", w.signedBundle("conformance"))

	// stdio first: while serve runs, `toolhost mcp` would use it instead.
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("stdio/"+version, func(t *testing.T) {
			var got heard
			cs := connectEvents(t, &mcp.CommandTransport{Command: w.cmd("mcp")}, version, &got)
			checkPluginEvents(t, cs, version, &got)
		})
	}
	s := w.serve()
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		// `toolhost mcp` now calls through serve's control socket: the
		// events cross it too.
		t.Run("stdio-via-serve/"+version, func(t *testing.T) {
			var got heard
			cs := connectEvents(t, &mcp.CommandTransport{Command: w.cmd("mcp")}, version, &got)
			checkPluginEvents(t, cs, version, &got)
		})
		t.Run("http/"+version, func(t *testing.T) {
			var got heard
			hc := &http.Client{Transport: bearer{token: s.token}}
			cs := connectEvents(t, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: hc}, version, &got)
			checkPluginEvents(t, cs, version, &got)
		})
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// heard is what a client was sent: the plugin's lines and all progress.
type heard struct {
	mu       sync.Mutex
	lines    []string
	progress []*mcp.ProgressNotificationParams
}

// take waits until what was heard stops changing (the client may run its
// handlers after the result) and returns it, starting afresh.
func (h *heard) take() ([]string, []*mcp.ProgressNotificationParams) {
	last := -1
	for range 60 {
		h.mu.Lock()
		n := len(h.lines) + len(h.progress)
		h.mu.Unlock()
		if n == last {
			break
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	lines, progress := h.lines, h.progress
	h.lines, h.progress = nil, nil
	return lines, progress
}

func connectEvents(t *testing.T, tr mcp.Transport, version string, h *heard) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-events", Version: "0"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			if r.Params.Logger == "conformance" { // the plugin's, not the host's "toolhost" lines
				h.mu.Lock()
				h.lines = append(h.lines, fmt.Sprintf("%s %v", r.Params.Level, r.Params.Data))
				h.mu.Unlock()
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, r.Params)
			h.mu.Unlock()
		},
	})
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// checkPluginEvents asks for lines the way the revision has it: the
// session's logging/setLevel on 2025-11-25, each request's _meta logLevel
// on 2026-07-28 (which ignores the session's).
func checkPluginEvents(t *testing.T, cs *mcp.ClientSession, version string, h *heard) {
	t.Helper()
	ctx := context.Background()
	level := mcp.LoggingLevel("")
	setLevel := func(l mcp.LoggingLevel) {
		t.Helper()
		level = l
		if version == "2026-07-28" {
			return
		}
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: l}); err != nil {
			t.Fatal(err)
		}
	}
	call := func(p *mcp.CallToolParams) {
		t.Helper()
		if level != "" && version == "2026-07-28" {
			if p.Meta == nil {
				p.Meta = mcp.Meta{}
			}
			p.Meta[mcp.MetaKeyLogLevel] = string(level)
		}
		if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", p.Name, err, res)
		}
	}

	call(&mcp.CallToolParams{Name: "test_tool_with_logging"})
	if lines, progress := h.take(); len(lines)+len(progress) != 0 {
		t.Errorf("before setLevel, without a token: heard lines %q and %d progress notifications", lines, len(progress))
	}

	setLevel("info")
	call(&mcp.CallToolParams{Name: "test_tool_with_logging"})
	want := []string{"info Tool execution started", "info Tool processing data", "info Tool execution completed"}
	if lines, _ := h.take(); !slices.Equal(lines, want) {
		t.Errorf("at level info: plugin lines %q, want %q", lines, want)
	}
	setLevel("warning")
	call(&mcp.CallToolParams{Name: "test_tool_with_logging"})
	if lines, _ := h.take(); len(lines) != 0 {
		t.Errorf("at level warning the info lines came: %q", lines)
	}

	p := &mcp.CallToolParams{Name: "test_tool_with_progress"}
	p.SetProgressToken("e2e")
	call(p)
	_, progress := h.take()
	var seen []string
	tool := 0
	for i, n := range progress {
		seen = append(seen, fmt.Sprintf("%s %g/%g", n.Message, n.Progress, n.Total))
		if i > 0 && n.Progress <= progress[i-1].Progress {
			t.Errorf("progress %v after %v: must increase", n.Progress, progress[i-1].Progress)
		}
		if (n.Message == "half way" && n.Progress == 50 || n.Message == "done" && n.Progress == 100) && n.Total == 100 {
			tool++
		}
	}
	if tool != 2 || len(progress) < 4 || progress[0].Message != "started" || progress[len(progress)-1].Message != "finished" {
		t.Errorf("progress %q: want started, the tool's 50/100 and 100/100, finished", seen)
	}
	call(&mcp.CallToolParams{Name: "test_tool_with_progress"})
	if _, progress := h.take(); len(progress) != 0 {
		t.Errorf("%d progress notifications for a call without a token", len(progress))
	}
}
