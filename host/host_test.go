package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

var (
	echoOnce sync.Once
	echoWasm []byte
)

func echoModule(t testing.TB) []byte {
	t.Helper()
	echoOnce.Do(func() {
		var err error
		if echoWasm, err = os.ReadFile("testdata/echo/echo.wasm"); err != nil {
			t.Fatal(err)
		}
	})
	return echoWasm
}

// echoManifest is a manifest for testdata/echo with tools named by
// prefix (so two plugins can coexist) and the given limits JSON.
func echoManifest(name, version, prefix, limits string) []byte {
	return fmt.Appendf(nil, `{
  "name": %q, "version": %q, "description": "test plugin", "wasm": "echo.wasm",
  "tools": [
    {"name": "%secho", "description": "Echo the arguments", "export": "echo",
     "parameters": {"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer", "minimum": 0}}, "additionalProperties": false}},
    {"name": "%sfail", "description": "Always fails", "export": "fail", "parameters": {"type": "object"}},
    {"name": "%scounter", "description": "Calls of this instance", "export": "counter", "parameters": {"type": "object"}}
  ],
  "limits": %s
}`, name, version, prefix, prefix, prefix, limits)
}

type testEnv struct {
	t    testing.TB
	st   *store.Store
	h    *host.Host
	now  time.Time
	keys map[string]signing.PrivateKey
}

var (
	cacheOnce sync.Once
	cacheDir  string
)

func newEnv(t testing.TB, opts host.Options) *testEnv {
	t.Helper()
	cacheOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolhost-host-test-cache")
		if err != nil {
			t.Fatal(err)
		}
		cacheDir = dir
	})
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := sandbox.NewInProcess(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, st: st, now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), keys: map[string]signing.PrivateKey{}}
	opts.Store, opts.Engine = st, engine
	opts.Now = func() time.Time { return e.now }
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	t.Cleanup(func() {
		h.Close()
		engine.Close(context.Background())
		st.Close()
	})
	return e
}

// curator returns (creating and trusting unless untrusted) a named key.
func (e *testEnv) curator(name string, trusted bool) signing.PrivateKey {
	e.t.Helper()
	if k, ok := e.keys[name]; ok {
		return k
	}
	k, err := signing.GenerateKey(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.keys[name] = k
	if trusted {
		if err := e.h.AddTrustedKey(name, k.Public()); err != nil {
			e.t.Fatal(err)
		}
	}
	return k
}

func (e *testEnv) bundle(manifest []byte, signers ...signing.PrivateKey) *plugin.Bundle {
	e.t.Helper()
	b, err := plugin.NewBundle(manifest, echoModule(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, k := range signers {
		if _, err := b.AddSignature(signing.Sign(k, b.Digest(), time.Time{})); err != nil {
			e.t.Fatal(err)
		}
	}
	return b
}

func (e *testEnv) install(b *plugin.Bundle) {
	e.t.Helper()
	if _, err := e.h.Install(context.Background(), b, host.InstallOptions{}); err != nil {
		e.t.Fatalf("install: %v", err)
	}
}

func (e *testEnv) call(tool, args string) (json.RawMessage, error) {
	return e.h.Call(context.Background(), tool, []byte(args))
}

func wantCode(t *testing.T, err error, code toolerr.Code, msgPart string) {
	t.Helper()
	if got := toolerr.CodeOf(err); got != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	if !strings.Contains(err.Error(), msgPart) {
		t.Fatalf("error %q does not mention %q", err, msgPart)
	}
}

const defaultLimits = `{"memory_pages": 17, "timeout_ms": 2000, "max_output_bytes": 4096}`

func TestInstallListCall(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	e.install(e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits), alice))

	tools := e.h.Tools()
	if len(tools) != 3 || tools[0].Name != "counter" || tools[1].Plugin != "echo" || tools[1].Version != "1.0.0" {
		t.Fatalf("Tools = %+v", tools)
	}
	res, err := e.call("echo", `{"text": "héllo", "n": 3}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"text": "héllo", "n": 3}` {
		t.Fatalf("result = %s", res)
	}
	ps := e.h.Plugins()
	if len(ps) != 1 || ps[0].State != "verified" || len(ps[0].Signers) != 1 || ps[0].Signers[0] != "alice" {
		t.Fatalf("Plugins = %+v", ps)
	}
}

func TestEveryCallGetsAFreshInstance(t *testing.T) {
	e := newEnv(t, host.Options{})
	e.install(e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits), e.curator("alice", true)))
	for i := range 3 {
		res, err := e.call("counter", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		if string(res) != "1" {
			t.Fatalf("call %d: counter = %s, want 1 (state leaked between calls)", i, res)
		}
	}
}

func TestReuseInstancesIsTheManifestsOptIn(t *testing.T) {
	e := newEnv(t, host.Options{})
	m := strings.Replace(string(echoManifest("echo", "1.0.0", "", defaultLimits)), `"description": "test plugin",`, `"description": "test plugin", "reuse_instances": true,`, 1)
	e.install(e.bundle([]byte(m), e.curator("alice", true)))
	for i := 1; i <= 3; i++ {
		res, err := e.call("counter", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		if string(res) != fmt.Sprint(i) {
			t.Fatalf("call %d: counter = %s, want %d (the instance should be reused)", i, res, i)
		}
	}
	// A failed call never hands its instance to the next call.
	if _, err := e.call("fail", `{}`); err == nil {
		t.Fatal("fail succeeded")
	}
	if res, err := e.call("counter", `{}`); err != nil || string(res) != "1" {
		t.Fatalf("after a failed call: counter = %s, %v, want a fresh instance", res, err)
	}
}

func TestTrustPolicyAtInstall(t *testing.T) {
	e := newEnv(t, host.Options{})
	manifest := echoManifest("echo", "1.0.0", "", defaultLimits)
	for _, tc := range []struct {
		name    string
		signers []signing.PrivateKey
		want    error
	}{
		{"unsigned", nil, curator.ErrUnsigned},
		{"untrusted", []signing.PrivateKey{e.curator("mallory", false)}, curator.ErrUntrusted},
	} {
		_, err := e.h.Install(context.Background(), e.bundle(manifest, tc.signers...), host.InstallOptions{})
		if !errors.Is(err, host.ErrNotAllowed) || !errors.Is(err, tc.want) {
			t.Errorf("%s: Install error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if len(e.h.Plugins()) != 0 {
		t.Fatal("a refused plugin was installed")
	}
}

func TestDevFlagLoadsUnsigned(t *testing.T) {
	e := newEnv(t, host.Options{AllowUnsigned: true})
	e.install(e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits)))
	if _, err := e.call("echo", `{}`); err != nil {
		t.Fatal(err)
	}
	if p := e.h.Plugins()[0]; p.State != "dev-unsigned" {
		t.Fatalf("state = %s, want dev-unsigned", p.State)
	}
}

func TestRollbackProtection(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	e.install(e.bundle(echoManifest("echo", "1.2.0", "", defaultLimits), alice))
	older := e.bundle(echoManifest("echo", "1.1.0", "", defaultLimits), alice)
	if _, err := e.h.Install(context.Background(), older, host.InstallOptions{}); !errors.Is(err, host.ErrDowngrade) {
		t.Fatalf("downgrade: %v", err)
	}
	// Also after remove: the high-water mark stays.
	if err := e.h.Remove("echo"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.Install(context.Background(), older, host.InstallOptions{}); !errors.Is(err, host.ErrDowngrade) {
		t.Fatalf("downgrade after remove: %v", err)
	}
	if _, err := e.h.Install(context.Background(), older, host.InstallOptions{AllowDowngrade: true}); err != nil {
		t.Fatalf("explicit downgrade: %v", err)
	}
	// Same version, different bytes: refused (a rebuilt 1.1.0 must be 1.1.1).
	changed := e.bundle(echoManifest("echo", "1.1.0", "", `{"memory_pages": 18}`), alice)
	if _, err := e.h.Install(context.Background(), changed, host.InstallOptions{}); !errors.Is(err, host.ErrDowngrade) {
		t.Fatalf("same version, new content: %v", err)
	}
	rep, err := e.h.Install(context.Background(), e.bundle(echoManifest("echo", "1.3.0", "", defaultLimits), alice), host.InstallOptions{})
	if err != nil || rep.Previous == nil || rep.Previous.Version != "1.1.0" {
		t.Fatalf("upgrade: %+v, %v", rep, err)
	}
}

func TestToolNameConflict(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	e.install(e.bundle(echoManifest("one", "1.0.0", "", defaultLimits), alice))
	_, err := e.h.Install(context.Background(), e.bundle(echoManifest("two", "1.0.0", "", defaultLimits), alice), host.InstallOptions{})
	if !errors.Is(err, host.ErrToolConflict) {
		t.Fatalf("conflicting tools: %v", err)
	}
	e.install(e.bundle(echoManifest("two", "1.0.0", "two_", defaultLimits), alice))
	if n := len(e.h.Tools()); n != 6 {
		t.Fatalf("%d tools, want 6", n)
	}
}

func TestRevocationStopsExactlyTheAffectedPlugins(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice, bob := e.curator("alice", true), e.curator("bob", true)
	e.install(e.bundle(echoManifest("a", "1.0.0", "a_", defaultLimits), alice))
	e.install(e.bundle(echoManifest("b", "1.0.0", "b_", defaultLimits), bob))
	e.install(e.bundle(echoManifest("ab", "1.0.0", "ab_", defaultLimits), alice, bob))
	changed := e.h.Changed()

	if err := e.h.Revoke(alice.Public().ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("revocation did not signal a change")
	}
	_, err := e.call("a_echo", `{}`)
	wantCode(t, err, toolerr.CodeUnavailable, "revoked")
	for _, tool := range []string{"b_echo", "ab_echo"} {
		if _, err := e.call(tool, `{}`); err != nil {
			t.Errorf("%s after revoking alice: %v", tool, err)
		}
	}
	for _, tool := range e.h.Tools() {
		if tool.Plugin == "a" {
			t.Fatalf("revoked plugin still listed: %+v", tool)
		}
	}
	// Adding the key back does not un-revoke it.
	if err := e.h.AddTrustedKey("alice", alice.Public()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call("a_echo", `{}`); toolerr.CodeOf(err) != toolerr.CodeUnavailable {
		t.Fatalf("re-added revoked key counted: %v", err)
	}
	if err := e.h.Unrevoke(alice.Public().ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call("a_echo", `{}`); err != nil {
		t.Fatalf("after unrevoke: %v", err)
	}
}

func TestThreshold(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice, bob := e.curator("alice", true), e.curator("bob", true)
	e.install(e.bundle(echoManifest("one", "1.0.0", "one_", defaultLimits), alice))
	if err := e.h.SetThreshold(2); err != nil {
		t.Fatal(err)
	}
	_, err := e.call("one_echo", `{}`)
	wantCode(t, err, toolerr.CodeUnavailable, "not enough distinct trusted curators")

	twice := e.bundle(echoManifest("twice", "1.0.0", "twice_", defaultLimits), alice)
	twice.Signatures = append(twice.Signatures, signing.Sign(alice, twice.Digest(), e.now.Add(time.Hour)))
	if _, err := e.h.Install(context.Background(), twice, host.InstallOptions{}); !errors.Is(err, curator.ErrBelowThreshold) {
		t.Fatalf("same key twice: %v, want below threshold", err)
	}
	e.install(e.bundle(echoManifest("both", "1.0.0", "both_", defaultLimits), alice, bob))
	if _, err := e.call("both_echo", `{}`); err != nil {
		t.Fatal(err)
	}
}

// TestResignatureWithLaterExpiryHoldsWithoutReload: a curator re-signs a
// bundle before its signature expires (the old signature stays beside the
// new one). The plugin stays callable past the old expiry without a reload,
// whichever order the two signatures are in, and stops at the later one.
func TestResignatureWithLaterExpiryHoldsWithoutReload(t *testing.T) {
	for _, order := range []string{"old first", "new first", "new never expires"} {
		t.Run(order, func(t *testing.T) {
			e := newEnv(t, host.Options{})
			alice := e.curator("alice", true)
			b := e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits))
			old := signing.Sign(alice, b.Digest(), e.now.Add(time.Hour))
			renewed := signing.Sign(alice, b.Digest(), e.now.Add(48*time.Hour))
			sigs := []signing.Signature{old, renewed}
			switch order {
			case "new first":
				sigs = []signing.Signature{renewed, old}
			case "new never expires":
				sigs = []signing.Signature{old, signing.Sign(alice, b.Digest(), time.Time{})}
			}
			for _, s := range sigs {
				if _, err := b.AddSignature(s); err != nil {
					t.Fatal(err)
				}
			}
			e.install(b)
			e.now = e.now.Add(2 * time.Hour)
			if _, err := e.call("echo", `{}`); err != nil {
				t.Fatalf("past the old signature's expiry, with a later one present: %v", err)
			}
			if order == "new never expires" {
				return
			}
			e.now = e.now.Add(72 * time.Hour)
			_, err := e.call("echo", `{}`)
			wantCode(t, err, toolerr.CodeUnavailable, "expired")
		})
	}
}

func TestExpiryTakesEffectWithoutReload(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	b := e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits))
	if _, err := b.AddSignature(signing.Sign(alice, b.Digest(), e.now.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	e.install(b)
	if _, err := e.call("echo", `{}`); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(2 * time.Hour)
	_, err := e.call("echo", `{}`)
	wantCode(t, err, toolerr.CodeUnavailable, "expired")
}

func TestDamagedStoreEntryIsQuarantined(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	e.install(e.bundle(echoManifest("good", "1.0.0", "good_", defaultLimits), alice))
	e.install(e.bundle(echoManifest("bad", "1.0.0", "bad_", defaultLimits), alice))

	// Someone edits the stored manifest: widen the limits, keep the digest.
	rec, err := e.st.Plugin("bad")
	if err != nil {
		t.Fatal(err)
	}
	rec.Manifest = echoManifest("bad", "1.0.0", "bad_", `{"memory_pages": 4096}`)
	if err := e.st.PutPlugin(rec, echoModule(t), store.HighWaterMark{Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := e.h.Reload(); err != nil {
		t.Fatal(err)
	}
	// The tool is installed but cannot run: plugin_unavailable, naming
	// the quarantine and what to do, not tool_not_found.
	_, err = e.call("bad_echo", `{}`)
	wantCode(t, err, toolerr.CodeUnavailable, "plugin bad is quarantined")
	wantCode(t, err, toolerr.CodeUnavailable, "install it again")
	_, err = e.call("bad_other", `{}`)
	wantCode(t, err, toolerr.CodeToolNotFound, "bad_other")
	if _, err := e.call("good_echo", `{}`); err != nil {
		t.Fatalf("an intact plugin stopped with a damaged one: %v", err)
	}
	p, err := e.h.Plugin("bad")
	if err != nil || p.State != "quarantined" || !strings.Contains(p.Reason, "does not match") {
		t.Fatalf("damaged plugin = %+v, %v", p, err)
	}
	q, _ := e.st.Quarantined()
	if q["bad"] == "" {
		t.Fatal("quarantine not recorded in the store")
	}
	// Neither plugin declares hooks, the damaged one included.
	if hooks := e.h.PolicyHooks(); len(hooks) != 0 {
		t.Fatalf("hooks %+v from plugins without any", hooks)
	}
}

// A policy plugin whose stored bytes stop verifying keeps the hooks its
// stored manifest names, and they fail closed: the tools it guarded are
// refused, not run unguarded, until it is removed or reinstalled.
func TestQuarantinedPolicyPluginFailsClosed(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	withHook := func(limits string) []byte {
		m := echoManifest("policy", "1.0.0", "p_", limits)
		return bytes.Replace(m, []byte(`"limits":`), []byte(`"hooks": [{"event": "before_call", "export": "echo", "tools": ["g_*"], "priority": 1}], "limits":`), 1)
	}
	e.install(e.bundle(withHook(defaultLimits), alice))
	if hooks := e.h.PolicyHooks(); len(hooks) != 1 {
		t.Fatalf("hooks of the intact policy plugin: %+v", hooks)
	}
	rec, err := e.st.Plugin("policy")
	if err != nil {
		t.Fatal(err)
	}
	rec.Manifest = withHook(`{"memory_pages": 4096}`) // edited in the store: the digest no longer matches
	if err := e.st.PutPlugin(rec, echoModule(t), store.HighWaterMark{Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := e.h.Reload(); err != nil {
		t.Fatal(err)
	}
	if p, _ := e.h.Plugin("policy"); p.State != "quarantined" {
		t.Fatalf("state %q, want quarantined", p.State)
	}
	hooks := e.h.PolicyHooks()
	if len(hooks) != 1 || hooks[0].Hook.Tools[0] != "g_*" {
		t.Fatalf("hooks of the quarantined policy plugin: %+v", hooks)
	}
	_, err = hooks[0].Call(context.Background(), "echo", []byte(`{}`))
	wantCode(t, err, toolerr.CodeUnavailable, "quarantined")
}

func TestArgumentsValidatedBeforeTheSandbox(t *testing.T) {
	e := newEnv(t, host.Options{})
	e.install(e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits), e.curator("alice", true)))
	deep := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
	for _, tc := range []struct{ args, msg string }{
		{`{"text": 5}`, `argument "/text"`},
		{`{"n": -1}`, `argument "/n"`},
		{`{"other": 1}`, "other"},
		{`[1]`, "must be a JSON object"},
		{`{"text": "x"`, "not valid JSON"},
		{`{"text": "x"} {}`, "unexpected data after the JSON value"},
		{`{"text": "a", "text": "b"}`, `duplicate key "text"`},
		{deep, "nested deeper"},
		{`{"text": "` + strings.Repeat("x", 2<<20) + `"}`, "limit"},
	} {
		_, err := e.call("echo", tc.args)
		if toolerr.CodeOf(err) != toolerr.CodeInvalidArguments || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("args %.40q: error %v, want invalid_arguments mentioning %q", tc.args, err, tc.msg)
		}
	}
	_, err := e.call("nope", `{}`)
	wantCode(t, err, toolerr.CodeToolNotFound, `"nope"`)
}

func TestToolErrorsAndOutputCap(t *testing.T) {
	e := newEnv(t, host.Options{})
	e.install(e.bundle(echoManifest("echo", "1.0.0", "", `{"memory_pages": 17, "timeout_ms": 2000, "max_output_bytes": 32}`), e.curator("alice", true)))
	_, err := e.call("fail", `{}`)
	wantCode(t, err, toolerr.CodePluginError, "echo refused this input")
	_, err = e.call("echo", `{"text": "`+strings.Repeat("y", 100)+`"}`)
	wantCode(t, err, toolerr.CodeOutputTooLarge, "limit is 32")
}

func TestInstallRefusesModulesTheSandboxDoesNotAccept(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	// A tool whose export the module does not have.
	m := []byte(strings.Replace(string(echoManifest("echo", "1.0.0", "", defaultLimits)), `"export": "fail"`, `"export": "missing"`, 1))
	_, err := e.h.Install(context.Background(), e.bundle(m, alice), host.InstallOptions{})
	if !errors.Is(err, host.ErrInvalidModule) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing export: %v", err)
	}
	// A module whose memory minimum is above the manifest's page limit.
	m = echoManifest("echo", "1.0.0", "", `{"memory_pages": 16}`)
	b, err := plugin.NewBundle(m, []byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x40"))
	if err != nil {
		t.Fatal(err)
	}
	b.AddSignature(signing.Sign(alice, b.Digest(), time.Time{}))
	if _, err := e.h.Install(context.Background(), b, host.InstallOptions{}); !errors.Is(err, host.ErrInvalidModule) {
		t.Fatalf("bad module: %v", err)
	}
}
