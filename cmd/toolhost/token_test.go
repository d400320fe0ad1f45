package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/home"
)

func TestAPITokenIsPrivate(t *testing.T) {
	t.Setenv("TOOLHOST_TOKEN", "")
	g := &globalOptions{home: t.TempDir()}
	tok, path, err := g.apiToken()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", fi.Mode(), err)
	}
	again, _, err := g.apiToken()
	if err != nil || again != tok {
		t.Fatalf("second read: %q %v", again, err)
	}

	// Readable by others: it may have been seen; refused.
	os.Chmod(path, 0o644)
	if _, _, err := g.apiToken(); !errors.Is(err, home.ErrNotPrivate) || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("world-readable token: %v", err)
	}
	// A symlink planted in its place is not followed.
	os.Remove(path)
	other := filepath.Join(t.TempDir(), "planted")
	os.WriteFile(other, []byte(strings.Repeat("a", 32)), 0o600)
	os.Symlink(other, path)
	if _, _, err := g.apiToken(); !errors.Is(err, home.ErrNotPrivate) {
		t.Fatalf("symlinked token: %v", err)
	}
	// A token another user owns is never adopted.
	if os.Geteuid() == 0 {
		os.Remove(path)
		os.WriteFile(path, []byte(strings.Repeat("b", 32)), 0o600)
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, _, err := g.apiToken(); !errors.Is(err, home.ErrNotPrivate) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Fatalf("token of another user: %v", err)
		}
	}
}
