package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
)

// approvalManifest is echoManifest whose echo tool needs approval (its
// default policy is ask).
func approvalManifest(name, version, prefix string) []byte {
	return []byte(strings.Replace(string(echoManifest(name, version, prefix, defaultLimits)),
		`"export": "echo",`, `"export": "echo", "needs_approval": true,`, 1))
}

// A call that waited for a person runs only if its plugin is still the
// one it was decided for, and may still run: a plugin removed, replaced
// or revoked meanwhile does not run (the waiting call held the old plugin,
// whose module it compiled again), while a change to another plugin
// leaves the call as it was.
func TestPluginChangedWhileACallWaitsForApproval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(e *testEnv)
		want   toolerr.Code // "" : the call runs
		says   string
	}{
		{name: "removed", change: func(e *testEnv) {
			if err := e.h.Remove("a"); err != nil {
				t.Fatal(err)
			}
		}, want: toolerr.CodeUnavailable, says: "removed"},
		{name: "upgraded", change: func(e *testEnv) {
			e.install(e.bundle(approvalManifest("a", "1.1.0", "a_"), e.curator("alice", true)))
		}, want: toolerr.CodeUnavailable, says: "replaced"},
		{name: "revoked", change: func(e *testEnv) {
			if err := e.h.Revoke(e.curator("alice", true).Public().ID()); err != nil {
				t.Fatal(err)
			}
		}, want: toolerr.CodeUnavailable, says: "revoked"},
		{name: "another plugin installed", change: func(e *testEnv) {
			e.install(e.bundle(echoManifest("b", "1.0.0", "b_", defaultLimits), e.curator("alice", true)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, host.Options{})
			e.install(e.bundle(approvalManifest("a", "1.0.0", "a_"), e.curator("alice", true)))
			gov, err := govern.New(govern.Options{Store: e.st, ApprovalTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			e.h.SetGovernor(gov)
			type result struct {
				out json.RawMessage
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := e.call("a_echo", `{"text":"hi"}`)
				done <- result{out, err}
			}()
			p := waitApproval(t, gov.Approvals())
			tc.change(e)
			if err := gov.Approvals().Decide(p.ID, true, "", "cli"); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if tc.want == "" {
				if r.err != nil || !strings.Contains(string(r.out), "hi") {
					t.Fatalf("call after an unrelated change: %s %v", r.out, r.err)
				}
				return
			}
			if r.err == nil {
				t.Fatalf("the call ran (%s) although its plugin was %s while it waited", r.out, tc.name)
			}
			wantCode(t, r.err, tc.want, tc.says)
			if !strings.Contains(r.err.Error(), "call it again") && tc.name != "revoked" {
				t.Fatalf("error %q does not say what to do", r.err)
			}
		})
	}
}

func waitApproval(t *testing.T, a *govern.Approvals) govern.Pending {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ps := a.List(); len(ps) > 0 {
			return ps[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no call waits for approval")
	return govern.Pending{}
}

// A hook listed for a call runs only while its policy plugin is still the
// one installed and may run: a Governor lists the hooks once per call and
// runs them in turn, and a policy plugin revoked, removed or replaced
// meanwhile kept answering from its old, unloaded copy (its module
// compiled again), under a trust decision no longer true.
func TestHookOfAPolicyPluginChangedSinceListed(t *testing.T) {
	withHook := func(version string) []byte {
		m := echoManifest("policy", version, "p_", defaultLimits)
		return bytes.Replace(m, []byte(`"limits":`), []byte(`"hooks": [{"event": "before_call", "export": "echo", "tools": ["*"], "priority": 1}], "limits":`), 1)
	}
	for _, tc := range []struct {
		name   string
		change func(e *testEnv)
		says   string
	}{
		{"revoked", func(e *testEnv) {
			if err := e.h.Revoke(e.curator("alice", true).Public().ID()); err != nil {
				t.Fatal(err)
			}
		}, "revoked"},
		{"removed", func(e *testEnv) {
			if err := e.h.Remove("policy"); err != nil {
				t.Fatal(err)
			}
		}, "removed or replaced"},
		{"upgraded", func(e *testEnv) { e.install(e.bundle(withHook("1.1.0"), e.curator("alice", true))) }, "removed or replaced"},
		{"unrelated", func(e *testEnv) {
			e.install(e.bundle(echoManifest("b", "1.0.0", "b_", defaultLimits), e.curator("alice", true)))
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, host.Options{})
			e.install(e.bundle(withHook("1.0.0"), e.curator("alice", true)))
			hooks := e.h.PolicyHooks()
			if len(hooks) != 1 {
				t.Fatalf("hooks: %+v", hooks)
			}
			tc.change(e)
			out, err := hooks[0].Call(context.Background(), "echo", []byte(`{"text":"x"}`))
			if tc.says == "" {
				if err != nil || !strings.Contains(string(out), "x") {
					t.Fatalf("hook after an unrelated change: %s %v", out, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("the hook of a policy plugin %s since it was listed answered %s", tc.name, out)
			}
			wantCode(t, err, toolerr.CodeUnavailable, tc.says)
		})
	}
}
