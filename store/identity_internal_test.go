package store

import (
	"path/filepath"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

// A sealed store from before identities adopts one at its next open, and
// keeps it.
func TestStoreFromBeforeIdentitiesAdoptsOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	born := st.Identity()
	// What a toolhost before identities left: a sealed state without one.
	if err := st.update(0, func(txn *badger.Txn) error { return txn.Delete([]byte(journalIdentityKey)) }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var adopted Identity
	for range 2 {
		st, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		id := st.Identity()
		st.Close()
		if !id.Adopted || id.ID == born.ID || adopted.ID != "" && id != adopted {
			t.Fatalf("identity %+v (born %+v, adopted before %+v)", id, born, adopted)
		}
		adopted = id
	}
}
