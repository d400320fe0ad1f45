package host_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
)

// resigned returns b's content with only sigs as its signatures.
func resigned(t *testing.T, b *plugin.Bundle, sigs ...signing.Signature) *plugin.Bundle {
	t.Helper()
	out, err := plugin.NewBundle(b.ManifestBytes, b.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sigs {
		if _, err := out.AddSignature(s); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The same content signed again replaces the stored signatures, so a
// plugin whose signature expired or whose signer was revoked becomes
// available again; identical signatures change nothing, and signatures
// that fail the policy are refused.
func TestResignedBundleUpdatesSignatures(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice, bob := e.curator("alice", true), e.curator("bob", true)
	mallory := e.curator("mallory", false)
	b := e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits))
	expiring := signing.Sign(alice, b.Digest(), e.now.Add(time.Hour))
	e.install(resigned(t, b, expiring))

	// Identical signatures: already installed.
	rep, err := e.h.Install(context.Background(), resigned(t, b, expiring), host.InstallOptions{})
	if err != nil || !rep.Unchanged || rep.SignaturesUpdated {
		t.Fatalf("same signatures again: %+v, %v; want Unchanged", rep, err)
	}

	e.now = e.now.Add(2 * time.Hour)
	_, err = e.call("echo", `{}`)
	wantCode(t, err, toolerr.CodeUnavailable, "expired")

	// Signatures that do not pass the policy are refused, and the stored
	// ones stay.
	for name, sigs := range map[string][]signing.Signature{
		"untrusted": {signing.Sign(mallory, b.Digest(), time.Time{})},
		"expired":   {signing.Sign(bob, b.Digest(), e.now.Add(-time.Minute))},
		"unsigned":  nil,
	} {
		if _, err := e.h.Install(context.Background(), resigned(t, b, sigs...), host.InstallOptions{}); !errors.Is(err, host.ErrNotAllowed) {
			t.Errorf("%s signatures: %v, want ErrNotAllowed", name, err)
		}
	}

	// Signed again without expiry: the signatures are replaced, the
	// plugin is available at once, and survives a reload.
	rep, err = e.h.Install(context.Background(), resigned(t, b, signing.Sign(alice, b.Digest(), time.Time{})), host.InstallOptions{})
	if err != nil || rep.Unchanged || !rep.SignaturesUpdated || rep.Previous == nil {
		t.Fatalf("re-signed without expiry: %+v, %v; want SignaturesUpdated", rep, err)
	}
	if _, err := e.call("echo", `{}`); err != nil {
		t.Fatalf("after re-signing: %v", err)
	}
	if err := e.h.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call("echo", `{}`); err != nil {
		t.Fatalf("after re-signing and a reload: %v", err)
	}

	// The only signer revoked; a co-signature from bob brings it back.
	if err := e.h.Revoke(alice.Public().ID()); err != nil {
		t.Fatal(err)
	}
	_, err = e.call("echo", `{}`)
	wantCode(t, err, toolerr.CodeUnavailable, "revoked")
	cosigned := resigned(t, b, signing.Sign(alice, b.Digest(), time.Time{}), signing.Sign(bob, b.Digest(), time.Time{}))
	rep, err = e.h.Install(context.Background(), cosigned, host.InstallOptions{})
	if err != nil || !rep.SignaturesUpdated {
		t.Fatalf("co-signed by bob: %+v, %v; want SignaturesUpdated", rep, err)
	}
	if got := rep.Decision.Signers; len(got) != 1 || got[0] != "bob" {
		t.Errorf("signers = %v, want [bob]", got)
	}
	if _, err := e.call("echo", `{}`); err != nil {
		t.Fatalf("after bob's co-signature: %v", err)
	}
	p, err := e.h.Plugin("echo")
	if err != nil || p.State != "verified" || len(p.Signatures) != 2 {
		t.Fatalf("plugin = %+v, %v; want verified with two signatures", p, err)
	}
	// The same signatures in another order are the same set.
	rep, err = e.h.Install(context.Background(), resigned(t, b, cosigned.Signatures[1], cosigned.Signatures[0]), host.InstallOptions{})
	if err != nil || !rep.Unchanged {
		t.Fatalf("same signatures reordered: %+v, %v; want Unchanged", rep, err)
	}
}
