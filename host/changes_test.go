package host_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// openAt opens a host over the store in dir (an in-process engine), the
// way a restart does.
func openAt(t *testing.T, dir string) (*host.Host, func()) {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := sandbox.NewInProcess(filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Store: st, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	return h, func() {
		h.Close()
		engine.Close(context.Background())
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}
}

func signed(t *testing.T, k signing.PrivateKey, manifest []byte) *plugin.Bundle {
	t.Helper()
	b, err := plugin.NewBundle(manifest, echoModule(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddSignature(signing.Sign(k, b.Digest(), time.Time{})); err != nil {
		t.Fatal(err)
	}
	return b
}

// N plugins whose tools collide, installed at once: exactly one succeeds,
// the others fail with ErrToolConflict, and after a restart (store
// reopened) exactly one plugin provides the tools.
func TestConcurrentCollidingInstalls(t *testing.T) {
	const n = 8
	dir := t.TempDir()
	h, closeHost := openAt(t, dir)
	k, _ := signing.GenerateKey(nil)
	if err := h.AddTrustedKey("alice", k.Public()); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		bundles := make([]*plugin.Bundle, n)
		for i := range bundles {
			// Every plugin provides echo/fail/counter under the same
			// prefix: they all collide.
			bundles[i] = signed(t, k, echoManifest(fmt.Sprintf("p%d-%d", round, i), "1.0.0", fmt.Sprintf("r%d_", round), defaultLimits))
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, b := range bundles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = h.Install(context.Background(), b, host.InstallOptions{})
			}()
		}
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, host.ErrToolConflict):
				t.Errorf("round %d install %d: %v, want ErrToolConflict", round, i, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of %d colliding installs succeeded, want exactly 1", round, ok, n)
		}
	}
	closeHost()

	h, closeHost = openAt(t, dir)
	defer closeHost()
	if ps := h.Plugins(); len(ps) != 3 {
		t.Fatalf("after restart: %d plugins, want one per round", len(ps))
	}
	if ts := h.Tools(); len(ts) != 9 {
		t.Fatalf("after restart: %d tools, want 9", len(ts))
	}
}

// 1.0.0 and 2.0.0 installed at once, many times: 1.0.0 never ends up
// installed once 2.0.0 was accepted.
func TestConcurrentDowngradeNeverSlipsIn(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	for round := range 10 {
		name := fmt.Sprintf("v%d", round)
		older := e.bundle(echoManifest(name, "1.0.0", name+"_", defaultLimits), alice)
		newer := e.bundle(echoManifest(name, "2.0.0", name+"_", defaultLimits), alice)
		var wg sync.WaitGroup
		var errOld, errNew error
		wg.Add(2)
		go func() { defer wg.Done(); _, errOld = e.h.Install(context.Background(), older, host.InstallOptions{}) }()
		go func() { defer wg.Done(); _, errNew = e.h.Install(context.Background(), newer, host.InstallOptions{}) }()
		wg.Wait()
		if errNew != nil {
			t.Fatalf("round %d: 2.0.0 refused: %v", round, errNew)
		}
		if errOld != nil && !errors.Is(errOld, host.ErrDowngrade) {
			t.Fatalf("round %d: 1.0.0: %v", round, errOld)
		}
		p, err := e.h.Plugin(name)
		if err != nil || p.Version != "2.0.0" {
			t.Fatalf("round %d: installed %q (%v) after 2.0.0 was accepted (1.0.0: %v)", round, p.Version, err, errOld)
		}
	}
}
