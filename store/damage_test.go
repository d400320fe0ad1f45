package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// populated is a store holding one key of each trust kind and a plugin.
type populated struct {
	dir           string
	alice, mallet signing.KeyID // mallet is revoked
	wasm          []byte
}

func populate(t testing.TB) populated {
	t.Helper()
	p := populated{dir: filepath.Join(t.TempDir(), "store"), wasm: []byte("\x00asm\x01\x00\x00\x00 damaged")}
	st, err := store.Open(p.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0).UTC()
	for _, name := range []string{"alice", "mallet"} {
		k, _ := signing.GenerateKey(nil)
		if err := st.AddTrustedKey(curator.TrustedKey{Name: name, Key: k.Public(), AddedAt: now}); err != nil {
			t.Fatal(err)
		}
		if name == "alice" {
			p.alice = k.Public().ID()
		} else {
			p.mallet = k.Public().ID()
		}
	}
	if err := st.Revoke(p.mallet, now); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPlugin(record("a", "1.2.0", p.wasm), p.wasm, store.HighWaterMark{Version: "1.2.0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetPolicy(store.PolicyRule{Pattern: "a_*", Action: store.PolicyDeny}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkJournalAnnounced(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// rawEdit changes the store with badger directly, as a tool outside
// toolhost would.
func rawEdit(t *testing.T, dir string, fn func(txn *badger.Txn) error) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSecurityStateEditedOutsideToolhostFailsClosed(t *testing.T) {
	p := populate(t)
	edits := map[string]func(txn *badger.Txn) error{
		"revocation deleted": func(txn *badger.Txn) error { return txn.Delete([]byte("trust/revoked/" + p.mallet.String())) },
		"key added": func(txn *badger.Txn) error {
			k, _ := signing.GenerateKey(nil)
			return txn.Set([]byte("trust/key/"+k.Public().ID().String()), []byte(`{}`))
		},
		"threshold changed":  func(txn *badger.Txn) error { return txn.Set([]byte("trust/policy"), []byte(`{"threshold":1}`)) },
		"high-water deleted": func(txn *badger.Txn) error { return txn.Delete([]byte("hiwater/a")) },
		"high-water lowered": func(txn *badger.Txn) error { return txn.Set([]byte("hiwater/a"), []byte("0.0.1")) },
		"quarantine added":   func(txn *badger.Txn) error { return txn.Set([]byte("quarantine/a"), []byte(`{}`)) },
		"deny rule deleted":  func(txn *badger.Txn) error { return txn.Delete([]byte("policy/rule/a_*")) },
		"deny made allow": func(txn *badger.Txn) error {
			return txn.Set([]byte("policy/rule/a_*"), []byte(`{"pattern":"a_*","action":"allow"}`))
		},
		"seal deleted": func(txn *badger.Txn) error { return txn.Delete([]byte("auth/seal")) },
		// An unrecorded change must not be hidden from the next start.
		"journal entry deleted": func(txn *badger.Txn) error { return txn.Delete([]byte("journal/e/00000000000000000004")) },
		"journal mark raised":   func(txn *badger.Txn) error { return txn.Set([]byte("journal/recorded"), []byte("99")) },
		// Records name the store by its identity: another store's must not
		// be taken for this one's.
		"store identity changed": func(txn *badger.Txn) error {
			return txn.Set([]byte("journal/id"), []byte(`{"id":"00000000000000000000000000000000"}`))
		},
		"store identity deleted": func(txn *badger.Txn) error { return txn.Delete([]byte("journal/id")) },
		"announced mark deleted": func(txn *badger.Txn) error { return txn.Delete([]byte("journal/announced")) },
		"everything deleted": func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.DefaultIteratorOptions)
			var keys [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			it.Close()
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			copyStore(t, p.dir, dir)
			rawEdit(t, dir, edit)
			st, err := store.Open(dir, nil)
			if err == nil {
				st.Close()
				t.Fatal("Open accepted a store whose security state was edited")
			}
			if !errors.Is(err, store.ErrTampered) {
				t.Fatalf("Open: %v, want ErrTampered", err)
			}
		})
	}
}

func TestLostKeyAnchorOrNewerStateFailsClosed(t *testing.T) {
	p := populate(t)
	older := filepath.Join(t.TempDir(), "store")
	copyStore(t, p.dir, older)
	st := open(t, p.dir)
	if err := st.Unrevoke(p.mallet); err != nil {
		t.Fatal(err)
	}
	if err := st.Revoke(p.mallet, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.Revoke(p.alice, time.Now()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	cases := map[string]func(dir string){
		"key file removed":    func(dir string) { os.Remove(dir + ".key") },
		"anchor removed":      func(dir string) { os.Remove(dir + ".seal") },
		"older copy restored": func(dir string) { os.RemoveAll(dir); copyTree(t, older, dir) },
		"store wiped":         func(dir string) { os.RemoveAll(dir) },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			copyStore(t, p.dir, dir)
			damage(dir)
			st, err := store.Open(dir, nil)
			if err == nil {
				st.Close()
				t.Fatal("Open accepted it")
			}
			if !errors.Is(err, store.ErrTampered) {
				t.Fatalf("Open: %v, want ErrTampered", err)
			}
		})
	}
}

func TestAnchoredStateReopens(t *testing.T) {
	p := populate(t)
	for range 3 {
		st := open(t, p.dir)
		ts, err := st.TrustSet()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ts.Revoked[p.mallet]; !ok || len(ts.Keys) != 2 {
			t.Fatalf("trust set after reopen: %+v", ts)
		}
		if hw, ok, err := st.HighWater("a"); err != nil || !ok || hw.Version != "1.2.0" {
			t.Fatalf("HighWater = %+v %v %v", hw, ok, err)
		}
		st.Close()
	}
}

// copyStore copies a store directory and its key and anchor files.
func copyStore(t testing.TB, from, to string) {
	t.Helper()
	copyTree(t, from, to)
	for _, ext := range []string{".key", ".seal"} {
		data, err := os.ReadFile(from + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+ext, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func copyTree(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range storeFiles(t, from) {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func storeFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}
