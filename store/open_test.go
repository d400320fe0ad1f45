package store_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/store"
)

// TestOpenNeedsANamedDirectory: a directory given as "" or "." (an unset
// variable, a relative path) does not scatter a store and a "..key" file
// in the working directory; the key always sits beside the store.
func TestOpenNeedsANamedDirectory(t *testing.T) {
	t.Chdir(t.TempDir()) // where a store opened at "" would land
	if _, err := store.Open("", nil); err == nil || !strings.Contains(err.Error(), "no directory given") {
		t.Fatalf(`store.Open("") = %v, want "no directory given"`, err)
	}
	if _, err := store.Open("/", nil); err == nil || !strings.Contains(err.Error(), "root") {
		t.Fatalf(`store.Open("/") = %v, want a refusal naming the root`, err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "st")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, rel := range []string{".", "./", "../st"} {
		st, err := store.Open(rel, nil)
		if err != nil {
			t.Fatalf("store.Open(%q): %v", rel, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(parent, "st.key")); err != nil {
			t.Errorf("store.Open(%q): no key beside the store: %v", rel, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "..key")); err == nil {
			t.Fatalf("store.Open(%q) wrote ..key inside the store directory", rel)
		}
	}
}
