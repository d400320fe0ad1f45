package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

func open(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func record(name, version string, wasm []byte) store.PluginRecord {
	sum := sha256.Sum256(wasm)
	manifest := []byte(`{"name":"` + name + `"}`)
	return store.PluginRecord{
		Name: name, Version: version, Manifest: manifest,
		Digest:     signing.PluginDigest(manifest, sum),
		WasmSHA256: hex.EncodeToString(sum[:]), Signatures: []byte(`{"signatures": []}`),
		InstalledAt: time.Unix(1700000000, 0).UTC(),
	}
}

func TestPluginLifecycleSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir)
	wasm := []byte("\x00asm\x01\x00\x00\x00 one")
	if err := st.PutPlugin(record("alpha", "1.0.0", wasm), wasm, store.HighWaterMark{Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open(t, dir)
	defer st.Close()
	rec, err := st.Plugin("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != "1.0.0" || string(rec.Manifest) != `{"name":"alpha"}` {
		t.Fatalf("record after reopen = %+v", rec)
	}
	blob, err := st.Blob(rec.WasmSHA256)
	if err != nil || string(blob) != string(wasm) {
		t.Fatalf("Blob = %q, %v", blob, err)
	}
	if err := st.CheckBlob(rec.WasmSHA256); err != nil {
		t.Fatalf("CheckBlob: %v", err)
	}
	if err := st.RemovePlugin("alpha"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Plugin("alpha"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Plugin after remove: %v, want ErrNotFound", err)
	}
	if _, err := st.Blob(rec.WasmSHA256); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Blob after remove: %v, want it gone", err)
	}
	if err := st.CheckBlob(rec.WasmSHA256); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("CheckBlob after remove: %v, want it gone", err)
	}
	hw, ok, err := st.HighWater("alpha")
	if err != nil || !ok || hw.Version != "1.0.0" {
		t.Fatalf("HighWater after remove = %+v %v %v, want 1.0.0 kept", hw, ok, err)
	}
	if err := st.RemovePlugin("alpha"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestSharedBlobStaysWhileReferenced(t *testing.T) {
	st := open(t, t.TempDir())
	defer st.Close()
	wasm := []byte("\x00asm\x01\x00\x00\x00 shared")
	for _, n := range []string{"a", "b"} {
		if err := st.PutPlugin(record(n, "1.0.0", wasm), wasm, store.HighWaterMark{Version: "1.0.0"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RemovePlugin("a"); err != nil {
		t.Fatal(err)
	}
	rec, _ := st.Plugin("b")
	if _, err := st.Blob(rec.WasmSHA256); err != nil {
		t.Fatalf("blob of b removed with a: %v", err)
	}
	ps, err := st.Plugins()
	if err != nil || len(ps) != 1 || ps[0].Name != "b" {
		t.Fatalf("Plugins = %v, %v", ps, err)
	}
}

func TestPutPluginRefusesMismatchedWasm(t *testing.T) {
	st := open(t, t.TempDir())
	defer st.Close()
	rec := record("a", "1.0.0", []byte("one"))
	if err := st.PutPlugin(rec, []byte("two"), store.HighWaterMark{Version: "1.0.0"}); err == nil {
		t.Fatal("PutPlugin accepted wasm that does not match the record")
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir)
	defer st.Close()
	_, err := store.Open(dir, nil)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

func TestTrustSet(t *testing.T) {
	st := open(t, t.TempDir())
	defer st.Close()
	k1, _ := signing.GenerateKey(nil)
	k2, _ := signing.GenerateKey(nil)
	now := time.Unix(1700000000, 0).UTC()
	for _, k := range []curator.TrustedKey{{Name: "alice", Key: k1.Public(), AddedAt: now}, {Name: "bob", Key: k2.Public(), AddedAt: now}} {
		if err := st.AddTrustedKey(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Revoke(k2.Public().ID(), now); err != nil {
		t.Fatal(err)
	}
	if err := st.SetThreshold(2); err != nil {
		t.Fatal(err)
	}
	if err := st.SetThreshold(0); err == nil {
		t.Fatal("threshold 0 accepted")
	}
	ts, err := st.TrustSet()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts.Keys) != 2 || ts.Keys[k1.Public().ID()].Name != "alice" || !ts.Keys[k1.Public().ID()].Key.Equal(k1.Public()) {
		t.Fatalf("keys = %+v", ts.Keys)
	}
	if _, revoked := ts.Revoked[k2.Public().ID()]; !revoked || ts.Threshold != 2 {
		t.Fatalf("revoked = %v threshold = %d", ts.Revoked, ts.Threshold)
	}
	// Removing a revoked key keeps the revocation.
	if err := st.RemoveTrustedKey(k2.Public().ID()); err != nil {
		t.Fatal(err)
	}
	ts, _ = st.TrustSet()
	if _, revoked := ts.Revoked[k2.Public().ID()]; !revoked {
		t.Fatal("revocation lost when the key was removed")
	}
	if err := st.Unrevoke(k2.Public().ID()); err != nil {
		t.Fatal(err)
	}
	if err := st.Unrevoke(k2.Public().ID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unrevoke twice: %v", err)
	}
	if err := st.RemoveTrustedKey(k2.Public().ID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("remove unknown key: %v", err)
	}
}

func TestQuarantine(t *testing.T) {
	st := open(t, t.TempDir())
	defer st.Close()
	wasm := []byte("x")
	if err := st.PutPlugin(record("a", "1.0.0", wasm), wasm, store.HighWaterMark{Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Quarantine("a", "blob hash mismatch"); err != nil {
		t.Fatal(err)
	}
	q, err := st.Quarantined()
	if err != nil || q["a"] != "blob hash mismatch" {
		t.Fatalf("Quarantined = %v, %v", q, err)
	}
	// A fresh install clears the quarantine.
	if err := st.PutPlugin(record("a", "1.0.1", wasm), wasm, store.HighWaterMark{Version: "1.0.1"}); err != nil {
		t.Fatal(err)
	}
	if q, _ := st.Quarantined(); len(q) != 0 {
		t.Fatalf("quarantine kept after reinstall: %v", q)
	}
}

// SetSignatures replaces only the signatures, and only of the content it
// names: a plugin replaced in between is not given them.
func TestSetSignaturesReplacesOnlyThoseOfTheSameContent(t *testing.T) {
	st := open(t, t.TempDir())
	defer st.Close()
	wasm := []byte("\x00asm\x01\x00\x00\x00 one")
	rec := record("alpha", "1.0.0", wasm)
	if err := st.PutPlugin(rec, wasm, store.HighWaterMark{Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	sigs := []byte(`{"signatures": [{"key_id": "0123456789abcdef", "signature": "x"}]}`)
	if err := st.SetSignatures("beta", rec.Digest, sigs); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("not installed: %v, want ErrNotFound", err)
	}
	other := record("alpha", "2.0.0", []byte("\x00asm\x01\x00\x00\x00 two")).Digest
	if err := st.SetSignatures("alpha", other, sigs); err == nil {
		t.Fatal("signatures of other content were stored")
	}
	if err := st.SetSignatures("alpha", rec.Digest, sigs); err != nil {
		t.Fatal(err)
	}
	got, err := st.Plugin("alpha")
	if err != nil || string(got.Signatures) != string(sigs) || !got.InstalledAt.Equal(rec.InstalledAt) || got.Version != "1.0.0" {
		t.Fatalf("after SetSignatures: %+v, %v", got, err)
	}
}

// A trusted name is one key's, ignoring case, and adding a trusted key
// again never renames it; adding it again under its name is a no-op that
// keeps when it was added.
func TestTrustNamesAreUnique(t *testing.T) {
	st := open(t, t.TempDir())
	defer st.Close()
	k1, _ := signing.GenerateKey(nil)
	k2, _ := signing.GenerateKey(nil)
	then := time.Unix(1700000000, 0).UTC()
	if err := st.AddTrustedKey(curator.TrustedKey{Name: "demo-curator", Key: k1.Public(), AddedAt: then}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []curator.TrustedKey{
		{Name: "demo-curator", Key: k2.Public(), AddedAt: then},
		{Name: "Demo-Curator", Key: k2.Public(), AddedAt: then},
		{Name: "other", Key: k1.Public(), AddedAt: then},
	} {
		err := st.AddTrustedKey(k)
		if !errors.Is(err, store.ErrTrustConflict) {
			t.Errorf("AddTrustedKey(%s, %s) = %v, want ErrTrustConflict", k.Name, k.Key.ID(), err)
		}
	}
	if err := st.AddTrustedKey(curator.TrustedKey{Name: "demo-curator", Key: k1.Public(), AddedAt: then.Add(time.Hour)}); err != nil {
		t.Fatalf("adding the same key under its name: %v", err)
	}
	ts, err := st.TrustSet()
	if err != nil {
		t.Fatal(err)
	}
	if got := ts.Keys[k1.Public().ID()]; len(ts.Keys) != 1 || got.Name != "demo-curator" || !got.AddedAt.Equal(then) {
		t.Fatalf("keys = %+v", ts.Keys)
	}
}
