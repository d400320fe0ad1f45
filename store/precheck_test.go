package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/store"
)

// The pre-open checks never touch a store another process holds: an empty
// log file in a live store may be one badger has just created, and
// deleting it broke the other process's writes.
func TestPrecheckLeavesAHeldStoreAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(t *testing.T, dir string)
	}{
		{"badger holds it", func(t *testing.T, dir string) {
			st := open(t, dir)
			t.Cleanup(func() { st.Close() })
		}},
		// As badger takes it: flock on the directory itself. A separate
		// open file description conflicts even within this process.
		{"a flock on the directory", func(t *testing.T, dir string) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			d, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			tc.hold(t, dir)
			empty := filepath.Join(dir, "00009.mem")
			if err := os.WriteFile(empty, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			// A damaged table would be reported as ErrCorrupt if checked.
			if err := os.WriteFile(filepath.Join(dir, "00099.sst"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := store.Open(dir, nil)
			if !errors.Is(err, store.ErrLocked) {
				t.Fatalf("Open of a held store: %v, want ErrLocked", err)
			}
			if _, err := os.Stat(empty); err != nil {
				t.Fatalf("Open of a held store removed its empty log: %v", err)
			}
		})
	}
}

// With the store free, the checks run: an empty log left by an
// interrupted write is removed and the store opens.
func TestPrecheckRemovesEmptyLogOfAFreeStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	open(t, dir).Close()
	empty := filepath.Join(dir, "00009.mem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := open(t, dir)
	defer st.Close()
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the empty log is still there: %v", err)
	}
}
