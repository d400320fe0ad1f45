package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A subscriptions/listen lasts as long as its client, on either revision:
// as a stateless POST (2026-07-28) or as a POST in a 2025-11-25 session,
// which the SDK serves too. Drain does not wait for one (it would wait
// out AnswerGrace at every shutdown and report answers unwritten); the
// sessions' end closes it.
func TestDrainDoesNotWaitForListen(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			s := New(newFake(tool("echo", echoSchema)), "dev")
			// The SDK registers a listen for the sessions' end to cancel
			// before it runs the method's handler: once listening is
			// closed, ending the session ends the listen.
			listening := make(chan struct{})
			s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "subscriptions/listen" {
						close(listening)
					}
					return next(ctx, method, req)
				}
			})
			srv := httptest.NewServer(s.Handler(HTTPOptions{}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL,
				strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", version)
			req.Header.Set("Mcp-Method", "subscriptions/listen")
			if version == "2025-11-25" {
				c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
				tr := &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1, DisableStandaloneSSE: true}
				cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				req, _ = http.NewRequest(http.MethodPost, srv.URL,
					strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", version)
				req.Header.Set("Mcp-Session-Id", cs.ID())
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("listen: %s", resp.Status)
			}
			<-listening // its HTTP handler runs (and would count)
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // nothing owed: Drain need not wait at all
			if !s.Drain(ctx) {
				t.Fatal("Drain waited for a subscriptions/listen stream, as for an answer owed")
			}
		})
	}
}
