package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testplugins"
)

// cutter drops the first tools/call SSE response right after its first
// progress notification, as a flaky network would, and keeps a copy of
// every SSE body the client read.
type cutter struct {
	next http.RoundTripper
	cut  atomic.Bool

	mu   sync.Mutex
	seen bytes.Buffer // every SSE body, as read
}

func (c *cutter) RoundTrip(r *http.Request) (*http.Response, error) {
	isCall := false
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		isCall = bytes.Contains(body, []byte(`"tools/call"`))
	}
	resp, err := c.next.RoundTrip(r)
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = &cutBody{c: c, rc: resp.Body, cutAfterProgress: isCall && c.cut.CompareAndSwap(false, true)}
	return resp, nil
}

type cutBody struct {
	c                *cutter
	rc               io.ReadCloser
	cutAfterProgress bool
	read             bytes.Buffer
	dropped          bool
}

var errConnectionDropped = errors.New("test: connection dropped mid-stream")

func (b *cutBody) Read(p []byte) (int, error) {
	if b.dropped {
		return 0, errConnectionDropped
	}
	if b.cutAfterProgress && bytes.Contains(b.read.Bytes(), []byte("notifications/progress")) && bytes.HasSuffix(b.read.Bytes(), []byte("\n\n")) {
		b.dropped = true
		b.rc.Close()
		return 0, errConnectionDropped
	}
	// One byte at a time while a cut is pending, so the cut falls exactly
	// after the progress event.
	if b.cutAfterProgress && len(p) > 1 {
		p = p[:1]
	}
	n, err := b.rc.Read(p)
	b.read.Write(p[:n])
	b.c.mu.Lock()
	b.c.seen.Write(p[:n])
	b.c.mu.Unlock()
	return n, err
}

func (b *cutBody) Close() error { return b.rc.Close() }

// connectMCPAt connects the go-sdk client to /mcp at a protocol revision,
// through rt (which must add the token), with client retries as the SDK
// sets them by default.
func connectMCPAt(t *testing.T, srv *httptest.Server, rt http.RoundTripper, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "httpapi-test", Version: "0"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: rt}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("MCP connect at %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// A long call of the real runtime (the conformance fixture's
// test_tool_with_progress runs 2.5 s in wasm) survives a dropped SSE
// connection: the go-sdk client reconnects with Last-Event-ID, and the
// result arrives once.
func TestMCPCallSurvivesDroppedStream(t *testing.T) {
	h := newHostWith(t, host.Options{}, testplugins.Bundle(t, "conformance"))
	_, srv := serve(t, h, Options{})
	c := &cutter{next: bearer{testToken, srv.Client().Transport}}
	var progress atomic.Int32
	cs := connectMCPAt(t, srv, c, "2025-11-25", &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "resume"}})
	if err != nil {
		t.Fatalf("call across a dropped connection: %v", err)
	}
	if !c.cut.Load() {
		t.Fatal("the call's stream was never cut: the test proved nothing")
	}
	if res.IsError || textOf(res) != "Progress test completed" {
		t.Errorf("result %+v, want the fixture's text", res)
	}
	c.mu.Lock()
	answers := strings.Count(c.seen.String(), "Progress test completed")
	c.mu.Unlock()
	if answers != 1 {
		t.Errorf("the result came over the wire %d times, want exactly once", answers)
	}
	if progress.Load() < 2 {
		t.Errorf("%d progress notifications, want the first and the ones after the reconnect", progress.Load())
	}
}
