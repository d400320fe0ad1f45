package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/observe"
	"github.com/toolhost/toolhost/host/toolerr"
)

// Every call reaches the backend labelled with the front end it came
// through, so the pipeline counts and logs it as such.
func TestCallsAreLabelledWithTheirEntry(t *testing.T) {
	b := newFake()
	entries := make(chan host.Entry, 2)
	b.handle("echo", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		entries <- host.EntryOf(ctx)
		return json.RawMessage(`{}`), nil
	})
	_, srv := serve(t, b, Options{})
	if r := do(t, srv, "POST", "/v1/tools/echo/call", `{}`, ""); r.status != 200 {
		t.Fatalf("HTTP call: %d %s", r.status, r.body)
	}
	cs := connectMCP(t, srv, nil)
	if res, err := cs.CallTool(context.Background(), mcpCall("echo", nil)); err != nil || res.IsError {
		t.Fatalf("MCP call: %v %+v", err, res)
	}
	if got := []host.Entry{<-entries, <-entries}; got[0] != host.EntryHTTP || got[1] != host.EntryMCPHTTP {
		t.Fatalf("entries %v, want [http mcp-http]", got)
	}
}

// An HTTP client that goes away cancels its call: the backend's ctx ends
// at once, not at the tool's deadline.
func TestClientGoneCancelsTheCall(t *testing.T) {
	b := newFake()
	ended := make(chan error, 1)
	entered := make(chan struct{})
	b.handle("slow", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		close(entered)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(30 * time.Second):
			ended <- nil
		}
		return nil, toolerr.Errorf(toolerr.CodeCancelled, "cancelled")
	})
	_, srv := serve(t, b, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/tools/slow/call", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	go func() {
		<-entered
		cancel()
	}()
	if _, err := srv.Client().Do(req); err == nil {
		t.Fatal("the request completed although its client gave up")
	}
	select {
	case err := <-ended:
		if err != context.Canceled {
			t.Fatalf("the call's ctx ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call's ctx was not cancelled within 10s of the client leaving")
	}
}

// With the host's metrics observer's registry, /metrics shows the calls of
// every entry point, counted by the host pipeline.
func TestEveryEntryPointCounted(t *testing.T) {
	// The observer is the host's, registered as serve does.
	m := observe.NewMetrics()
	h2 := newRealHostWith(t, host.Options{Observers: []host.CallObserver{m}})
	m.TrackLoad(h2)
	_, srv := serve(t, h2, Options{Registry: m.Registry()})
	if r := do(t, srv, "POST", "/v1/tools/get_current_time/call", `{"arguments":{"timezone":"UTC"}}`, ""); r.status != 200 {
		t.Fatalf("HTTP call: %d %s", r.status, r.body)
	}
	cs := connectMCP(t, srv, nil)
	if res, err := cs.CallTool(context.Background(), mcpCall("get_current_time", map[string]any{"timezone": "UTC"})); err != nil || res.IsError {
		t.Fatalf("MCP call: %v %+v", err, res)
	}
	if _, err := h2.Call(host.WithEntry(context.Background(), host.EntryCLI), "get_current_time", []byte(`{"timezone":"UTC"}`)); err != nil {
		t.Fatal(err)
	}
	do(t, srv, "POST", "/v1/tools/nope/call", `{}`, "")
	r := do(t, srv, "GET", "/metrics", "", "")
	mustContain(t, string(r.body),
		`toolhost_tool_calls_total{entry="http",outcome="ok",tool="get_current_time"} 1`,
		`toolhost_tool_calls_total{entry="mcp-http",outcome="ok",tool="get_current_time"} 1`,
		`toolhost_tool_calls_total{entry="cli",outcome="ok",tool="get_current_time"} 1`,
		`toolhost_tool_calls_total{entry="http",outcome="tool_not_found",tool="_unknown"} 1`,
		`toolhost_tool_call_duration_seconds_count{tool="get_current_time"} 3`,
		`toolhost_tool_calls_in_flight 0`,
		`toolhost_tool_calls_queued 0`,
		`toolhost_http_requests_total{code="200",route="POST /v1/tools/{name}/call"} 1`,
		`go_goroutines`,
	)
}
