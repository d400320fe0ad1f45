package govern

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

func TestResolveMostSpecificWins(t *testing.T) {
	rules := []store.PolicyRule{
		{Pattern: "*", Action: "allow"},
		{Pattern: "delete_*", Action: "deny"},
		{Pattern: "delete_note", Action: "ask"},
		{Pattern: "read_*", Action: "allow"},
		{Pattern: "rea?_*", Action: "deny"}, // fewer literals than read_*
		{Pattern: "ab*", Action: "allow"},
		{Pattern: "a?b*", Action: "ask"}, // same literal count as ab*: stricter wins
	}
	destructive := &plugin.Tool{Name: "wipe", Annotations: &plugin.Annotations{Destructive: true}}
	for _, tc := range []struct {
		tool       *plugin.Tool
		rules      []store.PolicyRule
		want, from string
	}{
		{&plugin.Tool{Name: "delete_note"}, rules, "ask", `rule "delete_note"`},
		{&plugin.Tool{Name: "delete_file"}, rules, "deny", `rule "delete_*"`},
		{&plugin.Tool{Name: "read_file"}, rules, "allow", `rule "read_*"`},
		{&plugin.Tool{Name: "abbc"}, rules, "ask", `rule "a?b*"`},
		{&plugin.Tool{Name: "other", NeedsApproval: true}, rules, "allow", `rule "*"`},
		{&plugin.Tool{Name: "other", NeedsApproval: true}, nil, "ask", "default (needs_approval)"},
		{destructive, nil, "ask", "default (destructive)"},
		{&plugin.Tool{Name: "get_time"}, nil, "allow", "default"},
	} {
		got := Resolve(tc.tool, tc.rules)
		if got.Action != tc.want || got.Source != tc.from {
			t.Errorf("Resolve(%s) = %s from %s, want %s from %s", tc.tool.Name, got.Action, got.Source, tc.want, tc.from)
		}
	}
}

// A deny set while a call waits for approval stands: the approval that
// follows does not run the call. Any other change leaves the approval as
// it was.
func TestDenySetDuringApprovalStands(t *testing.T) {
	for _, tc := range []struct{ pattern, action string }{
		{"delete_note", "deny"}, {"delete_*", "deny"}, {"*", "deny"},
		{"delete_note", "allow"}, {"delete_note", "ask"}, {"other_*", "deny"},
	} {
		for _, viaSetPolicy := range []bool{true, false} {
			e := newEnv(t, false)
			type res struct {
				v   host.Verdict
				err error
			}
			done := make(chan res, 1)
			go func() {
				v, err := e.g.BeforeCall(context.Background(), call(noteTool, `{"id":"1"}`))
				done <- res{v, err}
			}()
			p := waitPending(t, e.g.Approvals())
			denies := tc.action == "deny" && tc.pattern != "other_*"
			if viaSetPolicy {
				if err := e.g.SetPolicy(tc.pattern, tc.action, "cli"); err != nil {
					t.Fatal(err)
				}
				if denies {
					// The waiting call is declined at once, as by the
					// operator who set the rule: nobody needs to decide it.
					r := <-done
					wantDenied(t, r.err, "set while the call waited, denies it")
					if r.v.Decision != "denied" || r.v.DecidedBy != "operator" {
						t.Fatalf("%s %s: verdict %+v", tc.pattern, tc.action, r.v)
					}
					if err := e.g.Approvals().Decide(p.ID, true, "", "cli"); !errors.Is(err, ErrNoSuchApproval) {
						t.Fatalf("%s %s: the declined call can still be decided: %v", tc.pattern, tc.action, err)
					}
					continue
				}
			} else {
				// The rule reaches the Governor, but the waiting call is
				// approved before it could be declined: the check after
				// the approval still refuses it.
				if err := e.g.opts.Store.SetPolicy(store.PolicyRule{Pattern: tc.pattern, Action: tc.action, SetAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
				if err := e.g.reload(); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.g.Approvals().Decide(p.ID, true, "", "cli"); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if denies {
				wantDenied(t, r.err, "policy denies delete_note", "set while the call waited")
				if r.v.Decision != "denied" || !strings.HasPrefix(r.v.DecidedBy, "policy rule") {
					t.Fatalf("%s %s: verdict %+v", tc.pattern, tc.action, r.v)
				}
				continue
			}
			if r.err != nil || r.v.Decision != "approved" {
				t.Fatalf("%s %s set during the wait: %+v %v", tc.pattern, tc.action, r.v, r.err)
			}
		}
	}
}
