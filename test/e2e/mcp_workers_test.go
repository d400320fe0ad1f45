package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A standalone `toolhost mcp` (no serve running) starts serve's worker
// pool, so a slow call does not hold up another tool: test_simple_text
// answers while test_tool_with_progress (2.5 s) still runs.
func TestMCPStdioStandaloneSlowCallDoesNotBlock(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", w.signedBundle("conformance"))

	cmd := w.cmd("mcp")
	started := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if r.Params.Message == "started" {
				started <- struct{}{}
			}
		},
	})
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// Warm one worker with the module, so the slow call is not the first.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil || res.IsError {
		t.Fatalf("warm-up call: %v %+v", err, res)
	}

	slowDone := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "test_tool_with_progress"}
		p.SetProgressToken("slow")
		_, err := cs.CallTool(ctx, p)
		slowDone <- err
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow call did not start within 30s")
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil || res.IsError {
		t.Fatalf("call beside the slow one: %v %+v", err, res)
	}
	select {
	case err := <-slowDone:
		t.Fatalf("the fast call waited for the slow one (slow ended first: %v); standalone mcp runs one worker?", err)
	default:
	}
	if err := <-slowDone; err != nil {
		t.Errorf("slow call: %v", err)
	}
}
