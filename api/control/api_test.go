package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"log/slog"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// Compile-time guards: both implementations satisfy the API.
var (
	_ control.API = control.Local{}
	_ control.API = (*control.Client)(nil)
)

func newHost(t *testing.T) *host.Host {
	t.Helper()
	return newHostWith(t, host.Options{})
}

// newHostWith opens a host with opts over a fresh store and an in-process
// engine (which it sets in opts).
func newHostWith(t *testing.T, opts host.Options) *host.Host {
	t.Helper()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := sandbox.NewInProcess(testplugins.CacheDir(t))
	if err != nil {
		t.Fatal(err)
	}
	opts.Store, opts.Engine = st, engine
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		engine.Close(context.Background())
		st.Close()
	})
	return h
}

func echoBundle(t *testing.T, version string, signers ...signing.PrivateKey) *plugin.Bundle {
	t.Helper()
	wasm, err := os.ReadFile("../../host/testdata/echo/echo.wasm")
	if err != nil {
		t.Fatal(err)
	}
	b, err := plugin.NewBundle([]byte(`{"name": "echo", "version": "`+version+`", "description": "d", "wasm": "echo.wasm",
 "tools": [{"name": "echo", "description": "Echo", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}},
           {"name": "fail", "description": "Fails", "parameters": {"type": "object"}}],
 "limits": {"memory_pages": 17}}`), wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range signers {
		b.AddSignature(signing.Sign(k, b.Digest(), time.Time{}))
	}
	return b
}

// TestConformance runs one suite against the in-process API and against
// the same host reached over a real unix socket: results and error kinds
// must not depend on which one the CLI got.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		api  func(t *testing.T, h *host.Host) control.API
	}{
		{"local", func(t *testing.T, h *host.Host) control.API { return control.Local{H: h} }},
		{"socket", func(t *testing.T, h *host.Host) control.API {
			sock, ln := listenTemp(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				control.Serve(ctx, ln, control.Local{H: h}, h, slog.New(slog.DiscardHandler))
			}()
			t.Cleanup(func() { cancel(); <-done })
			if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("socket mode: %v %v", fi, err)
			}
			if _, err := control.Listen(sock); err == nil {
				t.Fatal("a second server could listen on a live socket")
			}
			c, err := control.Dial(context.Background(), sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := newHost(t)
			api := tc.api(t, h)
			alice, _ := signing.GenerateKey(nil)

			// Refusals keep their kind.
			_, err := api.Install(ctx, echoBundle(t, "1.0.0", alice), host.InstallOptions{})
			if !errors.Is(err, host.ErrNotAllowed) || !errors.Is(err, curator.ErrUntrusted) {
				t.Fatalf("untrusted install: %v", err)
			}
			d, err := api.Evaluate(ctx, echoBundle(t, "1.0.0", alice))
			if err != nil || d.Allowed() || !errors.Is(d.Err, curator.ErrUntrusted) || len(d.Signatures) != 1 || d.Signatures[0].State != curator.StateUntrusted {
				t.Fatalf("Evaluate untrusted: %+v %v", d, err)
			}

			if err := api.AddTrustedKey(ctx, "alice", alice.Public()); err != nil {
				t.Fatal(err)
			}
			// Names are one key's; adding again under the same name changes
			// nothing, under another it is refused.
			bob, _ := signing.GenerateKey(nil)
			if err := api.AddTrustedKey(ctx, "alice", alice.Public()); err != nil {
				t.Fatalf("adding alice again: %v", err)
			}
			for _, c := range []struct {
				name string
				key  signing.PublicKey
			}{{"ALICE", bob.Public()}, {"alice2", alice.Public()}} {
				if err := api.AddTrustedKey(ctx, c.name, c.key); !errors.Is(err, store.ErrTrustConflict) {
					t.Fatalf("AddTrustedKey %s: %v, want ErrTrustConflict", c.name, err)
				}
			}
			ts, err := api.TrustSet(ctx)
			if err != nil || len(ts.Keys) != 1 || ts.Keys[alice.Public().ID()].Name != "alice" || !ts.Keys[alice.Public().ID()].Key.Equal(alice.Public()) {
				t.Fatalf("TrustSet: %+v %v", ts, err)
			}
			rep, err := api.Install(ctx, echoBundle(t, "1.1.0", alice), host.InstallOptions{})
			if err != nil || rep.Name != "echo" || rep.Version != "1.1.0" || len(rep.Decision.Signers) != 1 {
				t.Fatalf("Install: %+v %v", rep, err)
			}
			if _, err := api.Install(ctx, echoBundle(t, "1.0.0", alice), host.InstallOptions{}); !errors.Is(err, host.ErrDowngrade) {
				t.Fatalf("downgrade: %v", err)
			}

			tools, err := api.Tools(ctx)
			if err != nil || len(tools) != 2 || tools[0].Name != "echo" {
				t.Fatalf("Tools: %+v %v", tools, err)
			}
			res, err := api.Call(ctx, "echo", []byte(`{"n": 7}`))
			if err != nil || compact(res) != `{"n":7}` {
				t.Fatalf("Call: %s %v", res, err)
			}
			for _, c := range []struct {
				tool, args string
				code       toolerr.Code
			}{
				{"echo", `{"n": "x"}`, toolerr.CodeInvalidArguments},
				{"fail", `{}`, toolerr.CodePluginError},
				{"nope", `{}`, toolerr.CodeToolNotFound},
			} {
				if _, err := api.Call(ctx, c.tool, []byte(c.args)); toolerr.CodeOf(err) != c.code {
					t.Errorf("Call %s: %v, want code %s", c.tool, err, c.code)
				}
			}

			ps, err := api.Plugins(ctx)
			if err != nil || len(ps) != 1 || ps[0].State != "verified" || ps[0].Version != "1.1.0" {
				t.Fatalf("Plugins: %+v %v", ps, err)
			}
			if _, err := api.Plugin(ctx, "nope"); !errors.Is(err, host.ErrNotInstalled) {
				t.Fatalf("Plugin nope: %v", err)
			}

			if err := api.Revoke(ctx, alice.Public().ID()); err != nil {
				t.Fatal(err)
			}
			if _, err := api.Call(ctx, "echo", []byte(`{}`)); toolerr.CodeOf(err) != toolerr.CodeUnavailable {
				t.Fatalf("call after revoke: %v", err)
			}
			if err := api.Unrevoke(ctx, alice.Public().ID()); err != nil {
				t.Fatal(err)
			}
			if err := api.SetThreshold(ctx, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := api.Call(ctx, "echo", []byte(`{}`)); toolerr.CodeOf(err) != toolerr.CodeUnavailable {
				t.Fatalf("call below threshold: %v", err)
			}
			if err := api.SetThreshold(ctx, 0); err == nil {
				t.Fatal("threshold 0 accepted")
			}
			if err := api.RemoveTrustedKey(ctx, alice.Public().ID()); err != nil {
				t.Fatal(err)
			}
			if err := api.Remove(ctx, "echo"); err != nil {
				t.Fatal(err)
			}
			if err := api.Remove(ctx, "echo"); !errors.Is(err, host.ErrNotInstalled) {
				t.Fatalf("second remove: %v", err)
			}
		})
	}
}

func TestClientFollowsChanges(t *testing.T) {
	h := newHost(t)
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, control.SocketName)
	ln, err := control.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go control.Serve(ctx, ln, control.Local{H: h}, h, slog.New(slog.DiscardHandler))
	c, err := control.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	alice, _ := signing.GenerateKey(nil)
	if err := h.AddTrustedKey("alice", alice.Public()); err != nil {
		t.Fatal(err)
	}
	b := control.NewBackend(ctx, c, slog.New(slog.DiscardHandler))
	changed := b.Changed()
	if _, err := h.Install(ctx, echoBundle(t, "1.0.0", alice), host.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the remote backend did not see the install within 10s")
	}
	if tools := b.Tools(); len(tools) != 2 {
		t.Fatalf("remote Tools = %+v", tools)
	}
}

// A trust change that leaves every plugin as it was is no change for
// clients: no tools/list_changed storm on every key added.
func TestInvisibleChangesDoNotNotify(t *testing.T) {
	h := newHost(t)
	alice, _ := signing.GenerateKey(nil)
	if err := h.AddTrustedKey("alice", alice.Public()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Install(context.Background(), echoBundle(t, "1.0.0", alice), host.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	gen, changed := h.Watch()
	bob, _ := signing.GenerateKey(nil)
	if err := h.AddTrustedKey("bob", bob.Public()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Fatal("trusting an unrelated key signalled a change")
	default:
	}
	if err := h.Revoke(alice.Public().ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("revoking the plugin's only signer did not signal a change")
	}
	if g, _ := h.Watch(); g != gen+1 {
		t.Fatalf("generation %d after one visible change, want %d", g, gen+1)
	}
}

func TestDialWithoutServer(t *testing.T) {
	_, err := control.Dial(context.Background(), filepath.Join(t.TempDir(), "none.sock"))
	if !errors.Is(err, control.ErrNoServer) {
		t.Fatalf("Dial: %v, want ErrNoServer", err)
	}
}

func compact(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
