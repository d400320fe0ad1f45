package watch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/watch"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

func echoBundle(t *testing.T, name, version, hosts string, key *signing.PrivateKey) []byte {
	t.Helper()
	wasm, err := os.ReadFile("../testdata/echo/echo.wasm")
	if err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Appendf(nil, `{"name": %q, "version": %q, "description": "test plugin", "wasm": "echo.wasm",
  "tools": [{"name": %q, "description": "Echo the arguments", "export": "echo", "parameters": {"type": "object"}}],
  "permissions": {"allowed_hosts": [%s]}}`, name, version, name, hosts)
	b, err := plugin.NewBundle(manifest, wasm)
	if err != nil {
		t.Fatal(err)
	}
	if key != nil {
		if _, err := b.AddSignature(signing.Sign(*key, b.Digest(), time.Time{})); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestWatchedDirectory drives a real host (badger store, wazero sandbox)
// through the watcher: install, refusals, a widening upgrade held back, an
// upgrade applied, removal. Each change must be visible within 2 s.
func TestWatchedDirectory(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := sandbox.NewInProcess(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Store: st, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); engine.Close(context.Background()); st.Close() })
	key, err := signing.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddTrustedKey("alice", key.Public()); err != nil {
		t.Fatal(err)
	}

	// Warm the compilation cache, as any earlier install of the module
	// would: the 2 s bound is the watcher's, not a cold compile's (seconds
	// under -race on a loaded machine).
	warm, err := plugin.Decode(bytes.NewReader(echoBundle(t, "warm", "1.0.0", "", &key)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Install(context.Background(), warm, host.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Remove("warm"); err != nil {
		t.Fatal(err)
	}

	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	auditLog, err := audit.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { auditLog.Close() })
	api := &control.Governed{API: control.Local{H: h}, H: h, Audit: &audit.Recorder{Log: auditLog}, Actor: "watch"}

	dir := t.TempDir()
	var logs testplugins.SyncBuffer
	w, err := watch.New(watch.Options{Dir: dir, Host: api, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	version := func() string {
		for _, tl := range h.Tools() {
			if tl.Name == "echo" {
				return tl.Version
			}
		}
		return ""
	}
	// within waits for cond, failing after 2 s (the contract), and logs
	// how long it took.
	within := func(what string, cond func() bool) {
		t.Helper()
		start := time.Now()
		deadline := start.Add(2 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 2 s; log:\n%s", what, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
	}
	logged := func(what string) {
		t.Helper()
		within("log "+what, func() bool { return strings.Contains(logs.String(), what) })
	}
	put := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	put("echo.plugin", echoBundle(t, "echo", "1.0.0", "", &key))
	within("install", func() bool { return version() == "1.0.0" })
	if out, err := h.Call(context.Background(), "echo", []byte(`{"x":1}`)); err != nil || !strings.Contains(string(out), `"x"`) {
		t.Fatalf("call after install: %s, %v", out, err)
	}
	logged("watch: installed")

	put("garbage.plugin", []byte("not a bundle"))
	logged("garbage.plugin")
	put("unsigned.plugin", echoBundle(t, "other", "1.0.0", "", nil))
	logged(curator.ErrUnsigned.Error())
	put("copy.plugin", echoBundle(t, "echo", "1.0.1", "", &key))
	logged("already installed from echo.plugin")
	if version() != "1.0.0" {
		t.Fatalf("a refused bundle changed what serves: version %q", version())
	}
	os.Remove(filepath.Join(dir, "garbage.plugin"))
	os.Remove(filepath.Join(dir, "unsigned.plugin"))
	os.Remove(filepath.Join(dir, "copy.plugin"))

	// A widening upgrade is held back with the reason and the command.
	put("echo.plugin", echoBundle(t, "echo", "2.0.0", `"api.example.com"`, &key))
	logged("toolhost plugin install --yes")
	if !strings.Contains(logs.String(), "api.example.com") {
		t.Errorf("the held-back upgrade's log does not name the new host:\n%s", logs.String())
	}
	if version() != "1.0.0" {
		t.Fatalf("a widening upgrade was applied silently: version %q", version())
	}

	// A newer bundle granting nothing new upgrades.
	put("echo.plugin", echoBundle(t, "echo", "2.1.0", "", &key))
	within("upgrade", func() bool { return version() == "2.1.0" })
	logged("watch: upgraded")

	os.Remove(filepath.Join(dir, "echo.plugin"))
	within("removal", func() bool { return version() == "" })
	logged("watch: removed")
	if _, err := h.Call(context.Background(), "echo", []byte(`{}`)); err == nil {
		t.Error("echo still answers after its bundle was deleted")
	}
	// Each change the watcher made is in the audit log, by the watcher.
	f, err := os.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := audit.List(f, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		line, _ := json.Marshal(r)
		if strings.Contains(string(line), `"watch"`) {
			got = append(got, string(line))
		}
	}
	if len(got) != 3 { // install 1.0.0, upgrade to 2.1.0, remove
		t.Errorf("audit records by the watcher: %d, want 3:\n%s", len(got), strings.Join(got, "\n"))
	}
}
