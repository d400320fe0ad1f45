package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/store"
)

// The high-water mark holds the digest seen at its version: that content
// installs again after a remove or a deliberate downgrade, other content
// at that version needs --allow-downgrade even with nothing installed.
func TestHighWaterMarkHoldsTheDigest(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	ctx := context.Background()
	v2 := e.bundle(echoManifest("rb", "2.0.0", "", defaultLimits), alice)
	other2 := e.bundle(echoManifest("rb", "2.0.0", "", `{"memory_pages": 18}`), alice)
	v1 := e.bundle(echoManifest("rb", "1.0.0", "", defaultLimits), alice)
	e.install(v2)

	wantRefused := func(what string, err error, parts ...string) {
		t.Helper()
		if !errors.Is(err, host.ErrDowngrade) {
			t.Fatalf("%s: %v, want ErrDowngrade", what, err)
		}
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%s: %q does not say %q", what, err, p)
			}
		}
	}
	_, err := e.h.Install(ctx, other2, host.InstallOptions{})
	wantRefused("other 2.0.0 over 2.0.0", err, "rb 2.0.0 is already installed with different content", "--allow-downgrade")

	// (a) Removing the plugin does not let other content at the mark's
	// version in.
	if err := e.h.Remove("rb"); err != nil {
		t.Fatal(err)
	}
	_, err = e.h.Install(ctx, other2, host.InstallOptions{})
	wantRefused("other 2.0.0 after remove", err, "a different rb 2.0.0 (digest "+v2.Digest().Short(), "was installed before", "a curator must release a new version, or pass --allow-downgrade")
	// The same content installs again.
	if rep, err := e.h.Install(ctx, v2, host.InstallOptions{}); err != nil || rep.Previous != nil {
		t.Fatalf("the same 2.0.0 after remove: %+v, %v", rep, err)
	}

	// (b) After a deliberate downgrade, the 2.0.0 installed before is an
	// upgrade again; other content at 2.0.0 is still refused.
	if rep, err := e.h.Install(ctx, v1, host.InstallOptions{AllowDowngrade: true}); err != nil || rep.Previous == nil || rep.Previous.Version != "2.0.0" {
		t.Fatalf("downgrade to 1.0.0: %+v, %v", rep, err)
	}
	_, err = e.h.Install(ctx, other2, host.InstallOptions{})
	wantRefused("other 2.0.0 over 1.0.0", err, "a different rb 2.0.0", "was installed before")
	if strings.Contains(err.Error(), "build metadata") {
		t.Errorf("the message speaks of build metadata: %v", err)
	}
	if rep, err := e.h.Install(ctx, v2, host.InstallOptions{}); err != nil || rep.Previous == nil || rep.Previous.Version != "1.0.0" {
		t.Fatalf("the same 2.0.0 over 1.0.0: %+v, %v", rep, err)
	}

	// Replacing the content at the mark's version is deliberate, and the
	// mark follows it: the replaced content is now the other one.
	if _, err := e.h.Install(ctx, other2, host.InstallOptions{AllowDowngrade: true}); err != nil {
		t.Fatalf("other 2.0.0 with --allow-downgrade: %v", err)
	}
	if err := e.h.Remove("rb"); err != nil {
		t.Fatal(err)
	}
	_, err = e.h.Install(ctx, v2, host.InstallOptions{})
	wantRefused("the replaced 2.0.0", err, "a different rb 2.0.0 (digest "+other2.Digest().Short())
	e.install(other2)

	// Below the mark still needs --allow-downgrade, and a higher version
	// installs.
	_, err = e.h.Install(ctx, v1, host.InstallOptions{})
	wantRefused("1.0.0 below the mark", err, "rb 1.0.0 is older than 2.0.0")
	e.install(e.bundle(echoManifest("rb", "2.0.1", "", defaultLimits), alice))
}

// A mark written before marks held digests knows only its version: the
// installed plugin at that version stands for its content, and with none
// installed any content at that version is accepted, as before.
func TestHighWaterMarkWithoutDigest(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	ctx := context.Background()
	v2 := e.bundle(echoManifest("rb", "2.0.0", "", defaultLimits), alice)
	other2 := e.bundle(echoManifest("rb", "2.0.0", "", `{"memory_pages": 18}`), alice)
	e.install(v2)
	rec, err := e.st.Plugin("rb")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.PutPlugin(rec, echoModule(t), store.HighWaterMark{Version: "2.0.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.Install(ctx, other2, host.InstallOptions{}); !errors.Is(err, host.ErrDowngrade) || !strings.Contains(err.Error(), "already installed with different content") {
		t.Fatalf("other 2.0.0 over an installed 2.0.0, old mark: %v", err)
	}
	if err := e.h.Remove("rb"); err != nil {
		t.Fatal(err)
	}
	e.install(other2)
	// The install recorded the digest: the first content is now refused.
	if err := e.h.Remove("rb"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.Install(ctx, v2, host.InstallOptions{}); !errors.Is(err, host.ErrDowngrade) {
		t.Fatalf("the first 2.0.0 after the mark learned the second's digest: %v", err)
	}
	if hw, ok, err := e.st.HighWater("rb"); err != nil || !ok || hw.Version != "2.0.0" || !hw.Digest.Equal(other2.Digest()) {
		t.Fatalf("HighWater = %+v %v %v, want 2.0.0 with the installed digest", hw, ok, err)
	}
}
