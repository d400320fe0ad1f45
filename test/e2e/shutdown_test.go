package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShutdownEndsWaitingApprovals: SIGINT while a call waits for a
// person. Nobody can approve once the API and the control socket close, so
// the call ends at once, answered busy and recorded, and serve exits
// cleanly with its socket gone. (It used to wait for the approval timeout
// up to the shutdown bound of 65 s, then exit 1, "shutdown: context
// deadline exceeded", the caller's connection cut without an answer or an
// audit record.)
func TestShutdownEndsWaitingApprovals(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	w.run("policy", "set", "get_current_time", "ask")
	s := w.serve("--approval-timeout", "1h")
	answered := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.url+"/v1/tools/get_current_time/call", strings.NewReader(`{"arguments":{"timezone":"UTC"}}`))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- response{body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answered <- response{resp.StatusCode, body}
	}()
	for {
		var pending []json.RawMessage
		if err := json.Unmarshal([]byte(w.run("approvals", "list", "--json")), &pending); err != nil {
			t.Fatal(err)
		}
		if len(pending) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.interrupt(t, " with a call waiting for approval")
	r := <-answered
	if r.status != 503 && r.status != 429 || r.errorCode() != "busy" || !strings.Contains(string(r.body), "shutting down") {
		t.Fatalf("the waiting call got %d %s, want busy saying toolhost is shutting down", r.status, r.body)
	}
	if _, err := os.Lstat(filepath.Join(w.home, "control.sock")); !os.IsNotExist(err) {
		t.Fatalf("control.sock after a clean shutdown: %v", err)
	}
	out := w.run("audit", "list", "--tool", "get_current_time", "--json")
	if !strings.Contains(out, `"decision":"denied"`) || !strings.Contains(out, `"decided_by":"toolhost"`) {
		t.Fatalf("the ended call's audit record: %s", out)
	}
}
