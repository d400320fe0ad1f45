package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPQuestionDecidedElsewhere: a 2025-11-25 client over /mcp is asked
// to approve a call (elicitation/create) and does not answer. An operator's
// approval, a deny rule set meanwhile, or shutdown decides the call; the
// client gets the call's outcome at once (it used to wait for its user),
// the log holds one decision record per call and verifies, and serve exits
// cleanly.
//
// It runs over `toolhost mcp` in front of serve. Over streamable HTTP the
// go-sdk v1.8.0 client never receives the withdrawal of its question (the
// SDK sends it after the request's stream closed), so its blocked question
// handler holds the client's Close, and the outcome at shutdown races the
// server's exit; api/mcpserver's TestDecidedWhileClientIsAsked covers the
// HTTP transport in process.
func TestMCPQuestionDecidedElsewhere(t *testing.T) {
	for _, via := range []string{"toolhost mcp"} {
		t.Run(via, func(t *testing.T) { questionDecidedElsewhere(t, via) })
	}
}

// questionDecidedElsewhere runs the test over /mcp or over `toolhost mcp`
// in front of the serve (the question then crosses the control socket).
func questionDecidedElsewhere(t *testing.T, via string) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	w.run("policy", "set", "get_current_time", "ask")
	s := w.serve("--approval-timeout", "1h")
	asked := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-asked", Version: "0"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			<-ctx.Done() // the user never answers
			return nil, ctx.Err()
		},
	})
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{token: s.token}}}
	if via != "http" {
		tr = &mcp.CommandTransport{Command: w.cmd("mcp")}
	}
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(decide func(id string)) string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_current_time", Arguments: map[string]any{"timezone": "UTC"}})
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			b, _ := json.Marshal(res)
			got <- string(b)
		}()
		<-asked
		var pending []struct{ ID string }
		if err := json.Unmarshal([]byte(w.run("approvals", "list", "--json")), &pending); err != nil || len(pending) != 1 {
			t.Fatalf("pending %v %v", pending, err)
		}
		decide(pending[0].ID)
		select {
		case g := <-got:
			return g
		case <-time.After(15 * time.Second):
			t.Fatal("the call was decided but the client still waits for its answer")
		}
		return ""
	}
	if g := call(func(id string) { w.run("approvals", "approve", id) }); !strings.Contains(g, "UTC") || strings.Contains(g, `"isError":true`) {
		t.Errorf("approved by an operator: %s", g)
	}
	if g := call(func(string) { w.run("policy", "set", "get_current_time", "deny") }); !strings.Contains(g, "denied") {
		t.Errorf("denied by a rule set meanwhile: %s", g)
	}
	w.run("policy", "set", "get_current_time", "ask")
	if g := call(func(string) { s.interrupt(t, " with an MCP question open") }); !strings.Contains(g, "shutting down") {
		t.Errorf("at shutdown: %s", g)
	}
	out := w.run("audit", "list", "--tool", "get_current_time", "--json")
	if n := strings.Count(out, `"decided_by"`); n != 3 {
		t.Errorf("%d decision records for 3 calls:\n%s", n, out)
	}
	w.run("audit", "verify")
}
