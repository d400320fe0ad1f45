package mcpserver

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/govern"
)

// A 2026-07-28 retry that names a call decided without the user (an
// operator, a deny rule, the timeout, shutdown) gets that call's outcome,
// with or without an answer: it is not asked again a question that no
// longer counts, its answer decides nothing, and the requestState is used
// up.
func TestMRTRRetryAfterTheCallWasDecided(t *testing.T) {
	ends := map[string]func(*govern.Approvals){
		"operator": func(a *govern.Approvals) { _ = a.Decide(a.List()[0].ID, false, "no", "cli") },
		"policy":   func(a *govern.Approvals) { _ = a.Decide(a.List()[0].ID, false, "rule", "policy") },
		"shutdown": func(a *govern.Approvals) { a.Close() },
		"timeout":  nil,
	}
	want := map[string]string{"operator": `"reason":"no"`, "policy": `"reason":"rule"`, "shutdown": "shutting down", "timeout": `"by":""`}
	approve := map[string]any{approvalKey: map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
	for name, end := range ends {
		for _, answer := range []map[string]any{nil, approve} {
			t.Run(fmt.Sprintf("%s/answered=%v", name, answer != nil), func(t *testing.T) {
				approvals := &govern.Approvals{Timeout: time.Minute}
				if end == nil {
					approvals.Timeout = 20 * time.Millisecond
				}
				decisions := 0
				approvals.OnDecide = func(govern.Pending, govern.Answer) { decisions++ }
				s := New(&askingBackend{fakeBackend: newFake(tool("delete_note", `{"type":"object"}`)), approvals: approvals}, "1")
				defer s.Close()
				srv := httptest.NewServer(s.Handler(HTTPOptions{}))
				defer srv.Close()
				args := map[string]any{"id": "7"}
				_, msg := statelessCall(t, srv.URL, "delete_note", map[string]any{"arguments": args})
				state, _ := resultOf(t, msg)["requestState"].(string)
				if end != nil {
					end(approvals)
				}
				noneWaiting(t, approvals, name)
				// The call ends on its own goroutine: wait for it, so the
				// retry comes after (one racing the end may be asked again).
				s.parked.mu.Lock()
				pc := s.parked.calls[state]
				s.parked.mu.Unlock()
				<-pc.done
				before := decisions
				params := map[string]any{"arguments": args, "requestState": state}
				if answer != nil {
					params["inputResponses"] = answer
				}
				_, msg = statelessCall(t, srv.URL, "delete_note", params)
				res := resultOf(t, msg)
				content, _ := res["content"].([]any)
				if res["resultType"] != "complete" || len(content) != 1 || !strings.Contains(content[0].(map[string]any)["text"].(string), want[name]) {
					t.Errorf("retry (answer %v) after the call was decided: %v; want its outcome (%s)", answer != nil, msg, want[name])
				}
				if decisions != before {
					t.Errorf("the retry's answer took a decision")
				}
				_, msg = statelessCall(t, srv.URL, "delete_note", params)
				if e, _ := msg["error"].(map[string]any); e["code"] != float64(-32602) {
					t.Errorf("the requestState used a second time: %v; want -32602", msg)
				}
			})
		}
	}
}
