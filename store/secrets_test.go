package store_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolhost/toolhost/store"
)

const testSecret = "s3cr3t-Value-7f1c9a"

// TestSecretsEncryptedAtRest: a secret reads back after a reopen, its key
// file is 0600, and no file of the store holds the value in clear.
func TestSecretsEncryptedAtRest(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "store")
	st := open(t, dir)
	if err := st.SetSecret("fetch", "api_token", testSecret); err != nil {
		t.Fatal(err)
	}
	if err := st.SetConfig("fetch", map[string]string{"units": "metric"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(home, store.SecretsKeyName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets key: %v, mode %v; want 0600", err, fi.Mode())
	}
	err = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(testSecret)) {
			t.Errorf("%s holds the secret in clear", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	st = open(t, dir)
	defer st.Close()
	got, err := st.Secrets("fetch")
	if err != nil || got["api_token"] != testSecret {
		t.Fatalf("Secrets = %v, %v", got, err)
	}
	if other, err := st.Secrets("fetch2"); err != nil || len(other) != 0 {
		t.Fatalf("another plugin's secrets = %v, %v; want none", other, err)
	}
	names, err := st.SecretNames("fetch")
	if err != nil || !slices.Equal(names, []string{"api_token"}) {
		t.Fatalf("SecretNames = %v, %v", names, err)
	}
	cfg, err := st.Config("fetch")
	if err != nil || cfg["units"] != "metric" {
		t.Fatalf("Config = %v, %v", cfg, err)
	}
	if err := st.RemoveSecret("fetch", "api_token"); err != nil {
		t.Fatal(err)
	}
	if err := st.RemoveSecret("fetch", "api_token"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removing it twice: %v, want ErrNotFound", err)
	}
}

// TestSecretsKeyReplaced: secrets under a lost key fail with ErrSecretsKey,
// and a new key is not made over secrets it cannot open.
func TestSecretsKeyReplaced(t *testing.T) {
	home := t.TempDir()
	st := open(t, filepath.Join(home, "store"))
	defer st.Close()
	if err := st.SetSecret("fetch", "api_token", testSecret); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(home, store.SecretsKeyName)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Secrets("fetch"); !errors.Is(err, store.ErrSecretsKey) {
		t.Fatalf("Secrets without the key: %v, want ErrSecretsKey", err)
	}
	if err := st.SetSecret("fetch", "other", "x"); !errors.Is(err, store.ErrSecretsKey) {
		t.Fatalf("SetSecret without the key: %v, want ErrSecretsKey", err)
	}
	if err := st.SetSecret("fetch", "bad", "line\nbreak"); err == nil {
		t.Fatal("a value with a line break was accepted")
	}
}

// Removing a plugin removes its configuration and secrets in the same
// transaction: a plugin installed again under the name starts without
// them, and no kill between two writes can leave them behind. Another
// plugin's settings stay.
func TestRemovePluginTakesItsSettings(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "store"))
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	for _, name := range []string{"fetch", "other"} {
		if err := st.PutPlugin(record(name, "1.0.0", wasm), wasm, store.HighWaterMark{Version: "1.0.0"}); err != nil {
			t.Fatal(err)
		}
		if err := st.SetSecret(name, "api_token", testSecret); err != nil {
			t.Fatal(err)
		}
		if err := st.SetConfig(name, map[string]string{"units": "metric"}); err != nil {
			t.Fatal(err)
		}
	}
	before := journalSeq(t, st)
	if err := st.RemovePlugin("fetch"); err != nil {
		t.Fatal(err)
	}
	if after := journalSeq(t, st); after != before+1 {
		t.Fatalf("remove made %d journal entries, want 1 (one transaction)", after-before)
	}
	if names, err := st.SecretNames("fetch"); err != nil || len(names) != 0 {
		t.Fatalf("secrets of the removed plugin: %v %v", names, err)
	}
	if cfg, err := st.Config("fetch"); err != nil || len(cfg) != 0 {
		t.Fatalf("config of the removed plugin: %v %v", cfg, err)
	}
	if names, err := st.SecretNames("other"); err != nil || len(names) != 1 {
		t.Fatalf("another plugin's secrets: %v %v", names, err)
	}
	if cfg, err := st.Config("other"); err != nil || cfg["units"] != "metric" {
		t.Fatalf("another plugin's config: %v %v", cfg, err)
	}
	// Removing what is not installed changes nothing, settings included.
	if err := st.RemovePlugin("fetch"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}
