package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestShutdownAnswersEveryWaitingCall: SIGTERM while a call waits for
// approval on every way in — plain HTTP, /mcp on 2025-11-25 with and
// without elicitation (the client's user is asked, or not), /mcp on
// 2026-07-28, `toolhost mcp` and `toolhost call` over the control socket.
// Each caller gets the busy outcome (toolhost is shutting down) before
// serve exits, each call has its decision record, and serve exits 0.
//
// Over /mcp the outcome used to race serve's exit: serve ended the MCP
// sessions as soon as no call was running in the host, and a session's end
// cuts its open POST streams, so an outcome the SDK had not yet written to
// its stream was lost (the client's stream ended without an answer).
func TestShutdownAnswersEveryWaitingCall(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	w.run("policy", "set", "get_current_time", "ask")
	s := w.serve("--approval-timeout", "1h")
	args := map[string]any{"timezone": "UTC"}

	var mu sync.Mutex
	outcomes := map[string]chan string{}
	start := func(name string, f func() string) {
		ch := make(chan string, 1)
		mu.Lock()
		outcomes[name] = ch
		mu.Unlock()
		go func() { ch <- f() }()
	}
	// The users asked never answer; their questions end with the test.
	unasked := make(chan struct{})
	defer close(unasked)
	asks := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-unasked:
			return nil, fmt.Errorf("the test ended")
		}
	}
	hc := &http.Client{Transport: bearer{token: s.token}}
	mcpCall := func(name string, tr mcp.Transport, version string, elicit bool) {
		opts := &mcp.ClientOptions{}
		if elicit {
			opts.ElicitationHandler = asks
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e-" + name, Version: "0"}, opts)
		cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		start(name, func() string {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_current_time", Arguments: args})
			go cs.Close() // a client whose question is still open holds Close until the test ends
			if err != nil {
				return "error: " + err.Error()
			}
			b, _ := json.Marshal(res)
			return string(b)
		})
	}
	httpMCP := func() mcp.Transport {
		return &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: hc}
	}

	start("http", func() string {
		req, _ := http.NewRequest("POST", s.url+"/v1/tools/get_current_time/call", strings.NewReader(`{"arguments":{"timezone":"UTC"}}`))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "error: " + err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, body)
	})
	mcpCall("mcp-http-asked", httpMCP(), "2025-11-25", true)
	mcpCall("mcp-http", httpMCP(), "2025-11-25", false)
	mcpCall("mcp-http-2026", httpMCP(), "2026-07-28", false)
	mcpCall("toolhost-mcp-asked", &mcp.CommandTransport{Command: w.cmd("mcp")}, "2025-11-25", true)
	start("toolhost-call", func() string {
		out, err := w.cmd("call", "get_current_time", `{"timezone":"UTC"}`).CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			return "error: " + err.Error()
		}
		return string(out)
	})

	// Every call waits for a person.
	for n := 0; n < len(outcomes); {
		r := s.do(t, "GET", "/v1/approvals", "")
		var list struct{ Approvals []json.RawMessage }
		if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 {
			t.Fatalf("GET /v1/approvals: %d %s", r.status, r.body)
		}
		if n = len(list.Approvals); n < len(outcomes) {
			time.Sleep(20 * time.Millisecond)
		}
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still runs 30s after SIGTERM with %d calls waiting for approval\n%s", len(outcomes), s.logs)
	}
	// serve is gone: whatever a client has not received by now, it never
	// will (the bound only keeps a broken client from hanging the test).
	for name, ch := range outcomes {
		select {
		case got := <-ch:
			if !strings.Contains(got, "shutting down") || !strings.Contains(got, "busy") && !strings.Contains(got, `"isError":true`) {
				t.Errorf("%s: the call waiting for approval at SIGTERM got %s, want busy saying toolhost is shutting down", name, got)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s: no answer 30s after serve exited", name)
		}
	}
	out := w.run("audit", "list", "--tool", "get_current_time", "--json")
	if n := strings.Count(out, `"decided_by":"toolhost"`); n != len(outcomes) {
		t.Errorf("%d decision records by toolhost for %d calls ended by the shutdown:\n%s", n, len(outcomes), out)
	}
	w.run("audit", "verify")
}
