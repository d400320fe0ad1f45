package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// A before_call hook's rewrite is checked as the call's own arguments are
// (size, strict JSON, the tool's schema) as soon as the hook answers:
// one the tool would not accept refuses the call there, naming the hook,
// before a later hook sees it or a person is asked to approve it. It used
// to be checked only after the approval: the person was asked about
// arguments (up to the hook answer's 4 MiB) that could never run.
func TestHookRewriteCheckedBeforeAnyoneSeesIt(t *testing.T) {
	e := newEnv(t, host.Options{MaxArgumentBytes: 4 << 10})
	e.install(e.bundle(approvalManifest("a", "1.0.0", "a_"), e.curator("alice", true)))
	var rewrite string
	var laterSaw atomic.Int32
	hooks := []govern.HookTarget{
		{Plugin: "rewriter", Hook: plugin.Hook{Event: plugin.HookBeforeCall, Export: "rw", Tools: []string{"*"}, Priority: 1},
			Call: func(context.Context, string, []byte) ([]byte, error) {
				return json.Marshal(map[string]any{"action": "rewrite", "arguments": json.RawMessage(rewrite)})
			}},
		{Plugin: "later", Hook: plugin.Hook{Event: plugin.HookBeforeCall, Export: "see", Tools: []string{"*"}, Priority: 2},
			Call: func(context.Context, string, []byte) ([]byte, error) {
				laterSaw.Add(1)
				return []byte(`{"action":"allow"}`), nil
			}},
	}
	gov, err := govern.New(govern.Options{Store: e.st, ApprovalTimeout: time.Minute, Hooks: func() []govern.HookTarget { return hooks }})
	if err != nil {
		t.Fatal(err)
	}
	e.h.SetGovernor(gov)

	for _, bad := range []string{
		`{"n":-1}`,                  // below the schema's minimum
		`{"text":7}`,                // wrong type
		`{"text":"x","other":true}`, // additionalProperties false
		`{"text":"` + strings.Repeat("x", 5<<10) + `"}`, // over MaxArgumentBytes
	} {
		rewrite = bad
		laterSaw.Store(0)
		done := make(chan error, 1)
		go func() { _, err := e.call("a_echo", `{"text":"hi"}`); done <- err }()
		var err error
	wait:
		for {
			select {
			case err = <-done:
				break wait
			default:
			}
			if ps := gov.Approvals().List(); len(ps) > 0 {
				_ = gov.Approvals().Decide(ps[0].ID, false, "test", "cli")
				t.Fatalf("a person was asked to approve the rewrite %.60s…, which the tool does not accept", ps[0].Arguments)
			}
			time.Sleep(time.Millisecond)
		}
		wantCode(t, err, toolerr.CodeDenied, "hook:rewriter/rw")
		if laterSaw.Load() != 0 {
			t.Fatalf("rewrite %.60s: a later hook saw arguments the tool does not accept", bad)
		}
	}

	// A rewrite the tool accepts is what the person approves and the tool gets.
	rewrite = `{"text":"rewritten"}`
	done := make(chan json.RawMessage, 1)
	go func() { out, _ := e.call("a_echo", `{"text":"hi"}`); done <- out }()
	p := waitApproval(t, gov.Approvals())
	if string(p.Arguments) != rewrite {
		t.Fatalf("the person is shown %s, the tool would get %s", p.Arguments, rewrite)
	}
	if err := gov.Approvals().Decide(p.ID, true, "", "cli"); err != nil {
		t.Fatal(err)
	}
	if out := <-done; string(out) != rewrite {
		t.Fatalf("the tool got %s after %s was approved", out, rewrite)
	}
}
