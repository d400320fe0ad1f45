package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// connectAt connects a go-sdk client asking for protocol revision version,
// over stdio ("stdio") or streamable HTTP (an URL).
func connectAt(t *testing.T, s *Server, where, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var tr mcp.Transport
	done := make(chan error, 1)
	if where == "stdio" {
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		go func() { done <- s.Run(ctx, sr, sw) }()
		tr = &mcp.IOTransport{Reader: cr, Writer: cw}
	} else {
		close(done)
		tr = &mcp.StreamableClientTransport{Endpoint: where}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts)
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// Both protocol eras work on both transports: the client gets the revision
// it asked for, lists, calls, and hears list_changed (over HTTP: the GET
// stream on 2025-11-25, subscriptions/listen on 2026-07-28).
func TestBothRevisionsOnBothTransports(t *testing.T) {
	b := newFake(tool("echo", echoSchema))
	entries := make(chan host.Entry, 16)
	b.answerCtx("echo", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		entries <- host.EntryOf(ctx)
		return json.RawMessage(`{"echo":true}`), nil
	})
	s := New(b, "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{SessionTimeout: time.Minute}))
	defer srv.Close()

	for _, where := range []string{"stdio", srv.URL} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			name := "http"
			wantEntry := host.EntryMCPHTTP
			if where == "stdio" {
				name, wantEntry = "stdio", host.EntryMCPStdio
			}
			t.Run(name+"/"+version, func(t *testing.T) {
				notified := make(chan struct{}, 16)
				cs := connectAt(t, s, where, version, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					notified <- struct{}{}
				}})
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Errorf("negotiated %q, want %q", got, version)
				}
				if sid := cs.ID(); (version == "2025-11-25" && name == "http") != (sid != "") {
					t.Errorf("session id %q: want one only for 2025-11-25 over HTTP", sid)
				}
				waitTools(t, cs, notified, "echo")
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a"}})
				if err != nil || res.IsError || textOf(res) != `{"echo":true}` {
					t.Fatalf("call: %v %+v", err, res)
				}
				if e := <-entries; e != wantEntry {
					t.Errorf("call entry = %q, want %q", e, wantEntry)
				}
				b.setTools(tool("echo", echoSchema), tool("more", `{"type":"object"}`))
				waitNotified(t, notified)
				waitTools(t, cs, notified, "echo", "more")
				b.setTools(tool("echo", echoSchema))
				waitTools(t, cs, notified, "echo")
			})
		}
	}
}

// On 2026-07-28 over HTTP the POST is the whole request: a client that
// gives up (its context ends, the connection closes) cancels the call.
func TestStatelessHTTPClientGoneCancelsCall(t *testing.T) {
	started := make(chan struct{}, 1)
	cancelled := make(chan struct{})
	b := newFake(tool("slow", `{"type":"object"}`))
	b.answerCtx("slow", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			close(cancelled)
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return json.RawMessage(`"finished"`), nil
		}
	})
	s := New(b, "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()
	cs := connectAt(t, s, srv.URL, "2026-07-28", nil)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		errc <- err
	}()
	<-started
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the call's ctx was not cancelled within 5s of the client giving up")
	}
	if err := <-errc; err == nil {
		t.Error("cancelled call returned no error to the client")
	}
}
