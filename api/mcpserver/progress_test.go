package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client that sends a progress token hears the call start, keep running
// and finish, with increasing progress, before the result; one that sends
// none hears nothing.
func TestProgressHeartbeat(t *testing.T) {
	b := newFake(tool("slow", `{"type":"object"}`))
	b.answer("slow", func([]byte) (json.RawMessage, error) {
		time.Sleep(300 * time.Millisecond)
		return json.RawMessage(`"done"`), nil
	})
	s := New(b, "dev")
	s.progressEvery = 50 * time.Millisecond
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()

	for _, where := range []string{"stdio", srv.URL} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			label := "http"
			if where == "stdio" {
				label = "stdio"
			}
			t.Run(label+"/"+version, func(t *testing.T) {
				var mu sync.Mutex
				var got []*mcp.ProgressNotificationParams
				cs := connectAt(t, s, where, version, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, r.Params)
				}})
				p := &mcp.CallToolParams{Name: "slow"}
				p.SetProgressToken("tok-1")
				if res, err := cs.CallTool(context.Background(), p); err != nil || res.IsError {
					t.Fatalf("call: %v %+v", err, res)
				}
				// The client may hand notifications to its handler after the
				// result; the server sent "finished" before it.
				var seen []*mcp.ProgressNotificationParams
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					mu.Lock()
					seen = append(seen[:0], got...)
					mu.Unlock()
					if n := len(seen); (n > 0 && seen[n-1].Message == "finished") || time.Now().After(deadline) {
						break
					}
				}
				mu.Lock()
				got = nil
				mu.Unlock()
				if len(seen) < 3 {
					t.Fatalf("%d progress notifications, want at least 3 (start, heartbeat, finish)", len(seen))
				}
				for i, n := range seen {
					if n.ProgressToken != "tok-1" {
						t.Errorf("notification %d token %v", i, n.ProgressToken)
					}
					if i > 0 && n.Progress <= seen[i-1].Progress {
						t.Errorf("progress %v after %v: must increase", n.Progress, seen[i-1].Progress)
					}
				}
				if seen[0].Message != "started" || seen[len(seen)-1].Message != "finished" {
					t.Errorf("first/last messages %q/%q, want started/finished", seen[0].Message, seen[len(seen)-1].Message)
				}
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond) // late deliveries, as above
				mu.Lock()
				defer mu.Unlock()
				if len(got) != 0 {
					t.Errorf("%d progress notifications for a call without a token", len(got))
				}
			})
		}
	}
}
