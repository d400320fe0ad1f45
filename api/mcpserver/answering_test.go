package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Drain at shutdown: a call that has ended but whose answer the SDK has
// not yet written (the window between a call's end and its answer on the
// wire) still gets its answer before the sessions end, on both revisions.
// Shutdown used to end the sessions as soon as no call ran; the SDK's
// session Close waits for the handlers in flight but refuses to write
// their answers (the connection is closing), so the client's stream ended
// without one.
func TestDrainWritesAnswersOwed(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			b := newFake(tool("echo", echoSchema))
			b.answer("echo", func([]byte) (json.RawMessage, error) { return json.RawMessage(`{"echo":"owed"}`), nil })
			s := New(b, "dev")
			srv := httptest.NewServer(s.Handler(HTTPOptions{}))
			defer srv.Close()
			ended := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			let := func() { once.Do(func() { close(release) }) }
			// Between the call's end and its answer: the backend has
			// returned, the SDK has yet to write the result. It is
			// released once Drain waits for it.
			s.answering.waiting = let
			s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if method == "tools/call" {
						close(ended)
						<-release
					}
					return res, err
				}
			})
			// No standalone stream: its end at Drain is not what is tested.
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			defer let() // first: a stuck handler holds the SDK's Close
			got := make(chan string, 1)
			go func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
				if err != nil {
					got <- "error: " + err.Error()
					return
				}
				b, _ := json.Marshal(res)
				got <- string(b)
			}()
			<-ended
			drained := make(chan bool, 1)
			go func() { drained <- s.Drain(context.Background()) }()
			select {
			case g := <-got:
				if !strings.Contains(g, "owed") {
					t.Errorf("the call that ended as the server drained got %s, want its answer", g)
				}
			case <-time.After(30 * time.Second):
				// A Drain that ends the sessions at once waits in the
				// SDK's Close for the handler, which then may not answer.
				t.Fatal("the call that ended as the server drained got no answer")
			}
			if !<-drained {
				t.Error("Drain gave up on an answer that was being written")
			}
		})
	}
}
