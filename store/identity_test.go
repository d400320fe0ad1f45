package store_test

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/toolhost/toolhost/store"

	badger "github.com/dgraph-io/badger/v4"
)

var identityRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// closing opens the store in dir, to be closed at the test's end.
func closing(t *testing.T, dir string) *store.Store {
	t.Helper()
	st := open(t, dir)
	t.Cleanup(func() { st.Close() })
	return st
}

// A store is born with a random identity that it keeps; a copy of it (a
// backup put back) is the same store; another store, even in the same
// place, is another.
func TestStoreIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st := open(t, dir)
	id := st.Identity()
	if !identityRE.MatchString(id.ID) || id.Adopted {
		t.Fatalf("new store's identity %+v", id)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := open(t, dir)
	if got := reopened.Identity(); got != id {
		t.Fatalf("identity after reopen %+v, want %+v", got, id)
	}
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "store")
	copyStore(t, dir, backup)
	if got := closing(t, backup).Identity(); got != id {
		t.Fatalf("a copy's identity %+v, want %+v", got, id)
	}
	if other := closing(t, filepath.Join(t.TempDir(), "store")).Identity(); other.ID == id.ID {
		t.Fatal("two new stores have one identity")
	}
}

// A store from before seals (records, no key file) adopts an identity at
// its first open, and keeps it.
func TestStoreFromBeforeSealsAdoptsAnIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	rawEdit(t, dir, func(txn *badger.Txn) error { return txn.Set([]byte("hiwater/a"), []byte("1.0.0")) })
	st := open(t, dir)
	id := st.Identity()
	if !identityRE.MatchString(id.ID) || !id.Adopted {
		t.Fatalf("identity %+v, want an adopted one", id)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := closing(t, dir).Identity(); got != id {
		t.Fatalf("identity after reopen %+v, want %+v", got, id)
	}
}

// The announced mark is set once and stays.
func TestJournalAnnounced(t *testing.T) {
	st := closing(t, filepath.Join(t.TempDir(), "store"))
	if done, err := st.JournalAnnounced(); err != nil || done {
		t.Fatalf("new store announced: %v, %v", done, err)
	}
	for range 2 {
		if err := st.MarkJournalAnnounced(); err != nil {
			t.Fatal(err)
		}
		if done, err := st.JournalAnnounced(); err != nil || !done {
			t.Fatalf("announced: %v, %v", done, err)
		}
	}
}
