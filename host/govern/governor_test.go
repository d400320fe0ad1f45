package govern

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

var (
	guardOnce sync.Once
	guardMod  engine.Module
	guardMan  *plugin.Manifest
	guardErr  error
)

// guard compiles the sample policy plugin once, in the real sandbox.
func guard(t *testing.T) (engine.Module, *plugin.Manifest) { return guardForBench(t) }

func guardForBench(t testing.TB) (engine.Module, *plugin.Manifest) {
	t.Helper()
	b := testplugins.Bundle(t, "guard")
	guardOnce.Do(func() {
		cache, err := os.MkdirTemp("", "toolhost-govern-test-cache")
		if err != nil {
			guardErr = err
			return
		}
		eng, err := sandbox.NewInProcess(cache)
		if err != nil {
			guardErr = err
			return
		}
		guardMan = b.Manifest()
		guardMod, guardErr = eng.Compile(context.Background(), engine.Spec{
			Key: b.Digest().String(), Name: guardMan.Name, Wasm: b.Wasm, Limits: guardMan.Limits.Effective(),
			Permissions: guardMan.Permissions, Exports: guardMan.Exports(), ReuseInstances: guardMan.ReuseInstances,
		})
	})
	if guardErr != nil {
		t.Fatal(guardErr)
	}
	return guardMod, guardMan
}

type env struct {
	g     *Governor
	log   *audit.Log
	hooks []HookTarget
}

func newEnv(t *testing.T, withGuard bool, extra ...HookTarget) *env {
	t.Helper()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := audit.Open(filepath.Join(t.TempDir(), audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	e := &env{log: l}
	if withGuard {
		mod, m := guard(t)
		for _, h := range m.Hooks {
			e.hooks = append(e.hooks, HookTarget{Plugin: m.Name, Hook: h, Call: mod.Call})
		}
	}
	e.hooks = append(e.hooks, extra...)
	e.g, err = New(Options{Store: st, Hooks: func() []HookTarget { return e.hooks }, ApprovalTimeout: time.Minute, Audit: &audit.Recorder{Log: l}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var (
	fetchTool = &plugin.Tool{Name: "fetch_url"}
	readTool  = &plugin.Tool{Name: "read_file"}
	noteTool  = &plugin.Tool{Name: "delete_note", NeedsApproval: true,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"deleted":{"type":"boolean"}},"required":["deleted"]}`)}
)

func call(tool *plugin.Tool, args string) *host.CallInfo {
	return &host.CallInfo{Entry: host.EntryHTTP, Tool: tool, Plugin: "p", Arguments: json.RawMessage(args)}
}

func wantDenied(t *testing.T, err error, parts ...string) {
	t.Helper()
	if toolerr.CodeOf(err) != toolerr.CodeDenied {
		t.Fatalf("err = %v, want denied", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("err %q does not say %q", err, p)
		}
	}
}

func TestGuardHooks(t *testing.T) {
	e := newEnv(t, true)
	ctx := context.Background()

	v, err := e.g.BeforeCall(ctx, call(fetchTool, `{"url":"https://blocked.example.com/x"}`))
	wantDenied(t, err, "hook:guard/check_fetch", "blocked.example.com is on the guard's block list")
	if v.Decision != "denied" || v.DecidedBy != "hook:guard/check_fetch" {
		t.Errorf("verdict = %+v", v)
	}

	v, err = e.g.BeforeCall(ctx, call(fetchTool, `{"url":"http://example.com/","headers":{"Authorization":"Bearer x","Accept":"text/html"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var args map[string]any
	if err := json.Unmarshal(v.Arguments, &args); err != nil {
		t.Fatalf("rewrite: %s: %v", v.Arguments, err)
	}
	if args["url"] != "https://example.com/" || args["headers"].(map[string]any)["Authorization"] != nil || args["headers"].(map[string]any)["Accept"] != "text/html" {
		t.Errorf("rewritten arguments = %s", v.Arguments)
	}
	if v.Decision != "allowed" || !strings.Contains(v.DecidedBy, "hook:guard/check_fetch rewrote") {
		t.Errorf("verdict = %+v", v)
	}

	v, err = e.g.BeforeCall(ctx, call(fetchTool, `{"url":"https://example.com/"}`))
	if err != nil || v.Arguments != nil {
		t.Fatalf("plain allow: %+v %v", v, err)
	}
	// Hooks see only the tools their globs name.
	if v, err := e.g.BeforeCall(ctx, call(readTool, `{"url":"https://blocked.example.com/"}`)); err != nil || v.Arguments != nil {
		t.Fatalf("read_file before_call: %+v %v", v, err)
	}

	res, err := e.g.AfterCall(ctx, call(readTool, `{"path":"a"}`), json.RawMessage(`{"content":"mail bob@example.com or ann.lee@mail.example.org","n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res), "@") || !strings.Contains(string(res), "[redacted e-mail]") || !strings.Contains(string(res), `"n":1`) {
		t.Errorf("redacted result = %s", res)
	}
}

func TestHooksFailClosed(t *testing.T) {
	mod, _ := guard(t)
	bad := func(event, export string, prio int) HookTarget {
		return HookTarget{Plugin: "broken", Hook: plugin.Hook{Event: event, Export: export, Tools: []string{"*"}, Priority: prio}, Call: mod.Call}
	}
	ctx := context.Background()
	// An export that answers something that is not a hook answer.
	e := newEnv(t, false, bad(plugin.HookBeforeCall, "guard_rules", 0))
	_, err := e.g.BeforeCall(ctx, call(readTool, `{}`))
	wantDenied(t, err, "hook:broken/guard_rules", "hooks fail closed")
	// A hook that fails (here: its export is missing).
	e = newEnv(t, false, bad(plugin.HookAfterCall, "no_such_export", 0))
	_, err = e.g.AfterCall(ctx, call(readTool, `{}`), json.RawMessage(`{}`))
	wantDenied(t, err, "hook:broken/no_such_export failed")
	// A hook that runs out of time: the guard's own limits, here the call's
	// deadline, which has passed.
	e = newEnv(t, true)
	dctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-dctx.Done()
	v, err := e.g.BeforeCall(dctx, call(fetchTool, `{"url":"https://example.com/"}`))
	if err == nil {
		t.Fatal("a hook that could not run allowed the call")
	}
	if v.Decision == "allowed" {
		t.Fatalf("a hook that could not run is recorded as %+v", v)
	}
	e = newEnv(t, false, bad(plugin.HookBeforeCall, "guard_rules", 0))
	if v, _ = e.g.BeforeCall(ctx, call(readTool, `{}`)); v.Decision != "denied" {
		t.Fatalf("a failing hook is recorded as %+v, want denied", v)
	}
}

// A call whose caller leaves while it waits for approval was decided by
// nobody: its record must not say "allowed".
func TestCallerGoneDuringApprovalIsNotAllowed(t *testing.T) {
	e := newEnv(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan host.Verdict, 1)
	go func() {
		v, err := e.g.BeforeCall(ctx, call(noteTool, `{"id":"1"}`))
		if toolerr.CodeOf(err) != toolerr.CodeCancelled {
			t.Errorf("err = %v, want cancelled", err)
		}
		done <- v
	}()
	waitPending(t, e.g.Approvals())
	cancel()
	if v := <-done; v.Decision != "cancelled" || v.DecidedBy != "caller" {
		t.Fatalf("verdict %+v, want decision cancelled by caller", v)
	}
	if ps := e.g.Approvals().List(); len(ps) != 0 {
		t.Fatalf("the call still waits for approval: %+v", ps)
	}
	// Over the bound of waiting calls: busy, at once, and not "allowed".
	e.g.approvals.MaxPending = 1
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	go e.g.BeforeCall(wctx, call(noteTool, `{"id":"2"}`))
	waitPending(t, e.g.Approvals())
	v, err := e.g.BeforeCall(context.Background(), call(noteTool, `{"id":"3"}`))
	if toolerr.CodeOf(err) != toolerr.CodeBusy || v.Decision != "denied" || !strings.Contains(err.Error(), "toolhost approvals list") {
		t.Fatalf("over the bound: %+v %v, want busy", v, err)
	}
}

// A call waiting for a person when the process shuts down is not run and
// not "allowed": busy (it may be made again), denied by toolhost, saying
// why.
func TestShutdownDuringApprovalIsNotAllowed(t *testing.T) {
	e := newEnv(t, false)
	type result struct {
		v   host.Verdict
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := e.g.BeforeCall(context.Background(), call(noteTool, `{"id":"1"}`))
		done <- result{v, err}
	}()
	waitPending(t, e.g.Approvals())
	e.g.Approvals().Close()
	for _, r := range []result{<-done, func() result {
		v, err := e.g.BeforeCall(context.Background(), call(noteTool, `{"id":"2"}`))
		return result{v, err}
	}()} {
		if toolerr.CodeOf(r.err) != toolerr.CodeBusy || r.v.Decision != "denied" || r.v.DecidedBy != "toolhost" ||
			!strings.Contains(r.err.Error(), "shutting down") || !strings.Contains(r.err.Error(), "did not run") {
			t.Fatalf("verdict %+v, err %v: want busy, denied by toolhost, saying it is shutting down", r.v, r.err)
		}
	}
}

// While the audit log refuses records (a write failed: a full disk), no
// call runs: each would answer without the record written before its
// answer. Every tool, whatever its policy, is refused before it runs.
func TestCallsRefusedWhileTheAuditLogRefuses(t *testing.T) {
	e := newEnv(t, false)
	if _, err := e.g.BeforeCall(context.Background(), call(readTool, `{}`)); err != nil {
		t.Fatalf("with a working log: %v", err)
	}
	e.log.Close() // a log that refuses records, as after a failed write
	for _, tool := range []*plugin.Tool{readTool, noteTool, fetchTool} {
		v, err := e.g.BeforeCall(context.Background(), call(tool, `{}`))
		if toolerr.CodeOf(err) != toolerr.CodeInternal || v.Decision != "denied" || v.DecidedBy != "toolhost" ||
			!strings.Contains(err.Error(), "the log takes no more records") || !strings.Contains(err.Error(), "restart toolhost") {
			t.Fatalf("%s with a refusing audit log: %+v %v", tool.Name, v, err)
		}
	}
}

func TestHookOrder(t *testing.T) {
	mod, _ := guard(t)
	// Lower priority first; the first deny ends the call, so the order
	// shows in who denied.
	deny := HookTarget{Plugin: "zz", Hook: plugin.Hook{Event: plugin.HookBeforeCall, Export: "check_fetch", Tools: []string{"fetch_*"}, Priority: 5}, Call: mod.Call}
	garbage := HookTarget{Plugin: "aa", Hook: plugin.Hook{Event: plugin.HookBeforeCall, Export: "guard_rules", Tools: []string{"*"}, Priority: 5}, Call: mod.Call}
	e := newEnv(t, false, deny, garbage)
	_, err := e.g.BeforeCall(context.Background(), call(fetchTool, `{"url":"https://blocked.example.com/"}`))
	wantDenied(t, err, "hook:aa/guard_rules") // tie on priority: plugin name aa before zz
	e.hooks[0].Hook.Priority = 1
	_, err = e.g.BeforeCall(context.Background(), call(fetchTool, `{"url":"https://blocked.example.com/"}`))
	wantDenied(t, err, "hook:zz/check_fetch", "block list")
}

func TestPolicyDenyAskAndAudit(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	if err := e.g.SetPolicy("delete_*", "deny", "cli"); err != nil {
		t.Fatal(err)
	}
	_, err := e.g.BeforeCall(ctx, call(noteTool, `{"id":"1"}`))
	wantDenied(t, err, "policy denies delete_note", `rule "delete_*"`, "toolhost policy set")
	if err := e.g.UnsetPolicy("delete_*", "cli"); err != nil {
		t.Fatal(err)
	}

	// needs_approval: ask. Approve, then deny.
	for _, approve := range []bool{true, false} {
		type res struct {
			v   host.Verdict
			err error
		}
		done := make(chan res)
		go func() {
			v, err := e.g.BeforeCall(ctx, call(noteTool, `{"id":"1"}`))
			done <- res{v, err}
		}()
		p := waitPending(t, e.g.Approvals())
		if err := e.g.Approvals().Decide(p.ID, approve, "not now", "cli"); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if approve {
			if r.err != nil || r.v.Decision != "approved" || r.v.DecidedBy != "operator" {
				t.Fatalf("approved: %+v %v", r.v, r.err)
			}
		} else {
			wantDenied(t, r.err, "operator declined", "not now")
		}
	}
	// Timeout.
	e.g.approvals.Timeout = 50 * time.Millisecond
	_, err = e.g.BeforeCall(ctx, call(noteTool, `{"id":"1"}`))
	wantDenied(t, err, "nobody approved delete_note within 50ms")

	data, _ := os.ReadFile(e.log.Path())
	for _, want := range []string{`"action":"policy_set"`, `"action":"policy_unset"`, `"action":"approval_approve"`, `"action":"approval_deny"`, `"action":"approval_timeout"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("audit log lacks %s:\n%s", want, data)
		}
	}
	if _, err := audit.Verify(strings.NewReader(string(data)), ""); err != nil {
		t.Fatal(err)
	}
}

func TestOutputSchema(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	if _, err := e.g.AfterCall(ctx, call(noteTool, `{}`), json.RawMessage(`{"deleted":true}`)); err != nil {
		t.Fatal(err)
	}
	// The message names the result's part, never an "argument" (the
	// validator's words are about arguments).
	for bad, names := range map[string]string{`{"deleted":"yes"}`: `result field "/deleted"`, `{}`: `result field "/deleted"`, `"text"`: "the result: "} {
		_, err := e.g.AfterCall(ctx, call(noteTool, `{}`), json.RawMessage(bad))
		if toolerr.CodeOf(err) != toolerr.CodePluginError || !strings.Contains(err.Error(), "output_schema") ||
			!strings.Contains(err.Error(), names) || strings.Contains(err.Error(), "argument") {
			t.Errorf("result %s: err = %v, want plugin_error naming %s", bad, err, names)
		}
	}
}

func TestNoApproverDeniesAsk(t *testing.T) {
	e := newEnv(t, false)
	e.g.opts.NoApprover = true
	_, err := e.g.BeforeCall(context.Background(), call(noteTool, `{"id":"1"}`))
	wantDenied(t, err, "nobody can be asked in this process", "toolhost serve")
	if len(e.g.Approvals().List()) != 0 {
		t.Fatal("a call waits where nobody can approve it")
	}
}

// BenchmarkBeforeCallHook measures a before_call hook of the guard sample
// (Go guest, fresh instance, in-process sandbox) deciding one call.
func BenchmarkBeforeCallHook(b *testing.B) {
	st, err := store.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	mod, m := guardForBench(b)
	hooks := []HookTarget{{Plugin: m.Name, Hook: m.Hooks[0], Call: mod.Call}}
	g, err := New(Options{Store: st, Hooks: func() []HookTarget { return hooks }})
	if err != nil {
		b.Fatal(err)
	}
	c := call(fetchTool, `{"url":"https://example.com/"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.BeforeCall(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
}
