package mcpserver

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/govern"
)

// A 2025-11-25 client is asked by the SDK's own round trip
// (elicitation/create). When the call is decided without the user while
// that question is open — an operator, a deny rule set meanwhile, the
// approval timeout, shutdown — the client gets the call's outcome at once,
// not after its user answers a question that no longer counts (which may
// be never), and a late answer changes nothing.
func TestDecidedWhileClientIsAsked(t *testing.T) {
	ends := []struct {
		name string
		end  func(a *govern.Approvals)
		want string
	}{
		{"operator", func(a *govern.Approvals) { _ = a.Decide(a.List()[0].ID, true, "ops", "cli") }, `{"approved":true,"by":"operator","reason":"ops"}`},
		{"policy", func(a *govern.Approvals) { _ = a.Decide(a.List()[0].ID, false, "denied meanwhile", "policy") }, `{"approved":false,"by":"operator","reason":"denied meanwhile"}`},
		{"shutdown", func(a *govern.Approvals) { a.Close() }, "shutting down"},
		{"timeout", nil, `{"approved":false,"by":"","reason":""}`},
	}
	for _, where := range []string{"stdio", "http"} {
		for _, tc := range ends {
			t.Run(where+"/"+tc.name, func(t *testing.T) {
				approvals := &govern.Approvals{Timeout: time.Minute}
				if tc.end == nil {
					approvals.Timeout = 20 * time.Millisecond
				}
				decisions := 0
				approvals.OnDecide = func(govern.Pending, govern.Answer) { decisions++ }
				s := New(&askingBackend{fakeBackend: newFake(tool("delete_note", `{"type":"object"}`)), approvals: approvals}, "1")
				defer s.Close()
				url := "stdio"
				if where == "http" {
					srv := httptest.NewServer(s.Handler(HTTPOptions{}))
					defer srv.Close()
					defer s.CloseSessions()
					url = srv.URL
				}
				asked, late := make(chan struct{}, 1), make(chan struct{})
				opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- struct{}{}
					select {
					case <-late: // the user answers after all
					case <-ctx.Done(): // the question was withdrawn
						return nil, ctx.Err()
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "reason": "late"}}, nil
				}}
				cs := connectAt(t, s, url, "2025-11-25", opts)
				got := make(chan string, 1)
				go func() {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"id": "1"}})
					if err != nil {
						got <- "error: " + err.Error()
						return
					}
					got <- textOf(res)
				}()
				<-asked
				if tc.end != nil {
					tc.end(approvals)
				}
				// Without the fix the answer waits for the user; the
				// late answer then lets the test end with the failure.
				var g string
				select {
				case g = <-got:
				case <-time.After(10 * time.Second):
					close(late)
					t.Fatalf("the call was decided (%s) but its answer waits for the user's: %s", tc.name, <-got)
				}
				close(late)
				if !strings.Contains(g, tc.want) {
					t.Errorf("answer %s, want %s", g, tc.want)
				}
				cs.Close()
				noneWaiting(t, approvals, tc.name)
				if want := map[bool]int{true: 1, false: 0}[tc.name == "operator" || tc.name == "policy"]; decisions != want {
					t.Errorf("%d decisions taken, want %d (a late answer must not decide)", decisions, want)
				}
			})
		}
	}
}
