package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/store"
)

// store_id is a member like the others: after store_seq, left out when
// empty, covered by the hash, and the documented cut-and-hash recipe
// still gives the hash; an empty one written out is not canonical.
func TestStoreIDMember(t *testing.T) {
	id := strings.Repeat("0f", 16)
	r := Record{Seq: 3, Time: time.Unix(1764000000, 0).UTC(), Prev: strings.Repeat("a", 64), Kind: KindChange,
		Action: "install", Subject: "notes", Actor: "cli", StoreSeq: 42, StoreID: id}
	line, hash, err := encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(line, []byte(`"actor":"cli","store_seq":42,"store_id":"`+id+`","hash":"`+hash+`"}`)) {
		t.Fatalf("line %s", line)
	}
	if want, _ := encodeJSON(r); !bytes.Equal(want, regexp.MustCompile(`,"hash":"[0-9a-f]{64}"}$`).ReplaceAll(line, []byte("}"))) {
		t.Fatal("encode and encoding/json disagree on store_id")
	}
	cut := regexp.MustCompile(`,"hash":"[0-9a-f]{64}"}$`).ReplaceAll(line, []byte("}"))
	if sum := sha256.Sum256(cut); hex.EncodeToString(sum[:]) != hash {
		t.Fatal("the README's recipe does not give the hash of a record with store_id")
	}
	back, err := ParseLine(line)
	if err != nil || back.StoreID != id || back.StoreSeq != 42 {
		t.Fatalf("ParseLine = %+v, %v", back, err)
	}
	r.StoreID = ""
	line, _, _ = encode(r)
	if bytes.Contains(line, []byte("store_id")) {
		t.Fatalf("empty store_id written: %s", line)
	}
	for _, bad := range []string{`,"store_id":""`, `,"store_id":1`, `,"store_id":null`} {
		body := bytes.Replace(line, []byte(`,"hash"`), []byte(bad+`,"hash"`), 1)
		if _, err := ParseLine(body); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// adopted is a store whose identity was adopted: it existed before
// identities, and records without store_id are its own.
type adopted struct{ *store.Store }

func (a adopted) Identity() store.Identity {
	id := a.Store.Identity()
	id.Adopted = true
	return id
}

// failingAnnounce is a store whose announced mark cannot be written: a
// kill between the log's record and the store's mark.
type failingAnnounce struct{ *store.Store }

func (failingAnnounce) MarkJournalAnnounced() error { return errors.New("killed") }

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A new store beside a kept log: the log says once that it now follows
// the new store, even when killed before the store's mark; the old
// store's records, whatever their numbers, do not account for the new
// store's changes, which carry the new store's identity.
func TestReconcileMatchesTheStoreNotOnlyTheNumber(t *testing.T) {
	f := newJournalFixture(t)
	for _, p := range []string{"a", "b", "c"} {
		if err := f.rec.Journaled("cli", f.setPolicy(p)); err != nil {
			t.Fatal(err)
		}
	}
	old := f.st.Identity().ID
	if recs := f.records(t); recs[2].StoreSeq != 3 || recs[2].StoreID != old {
		t.Fatalf("change record %+v, want store_seq 3 and store_id %s", recs[2], old)
	}
	st := openStore(t)
	if _, err := Reconcile(f.log, failingAnnounce{st}); err == nil {
		t.Fatal("Reconcile succeeded without its mark")
	}
	if n, err := Reconcile(f.log, st); err != nil || n != 0 {
		t.Fatalf("Reconcile after the kill = %d, %v; want 0 (the record is there)", n, err)
	}
	recs := f.records(t)
	changed := recs[len(recs)-1]
	if len(recs) != 4 || changed.Action != "audit_store_changed" || changed.StoreID != st.Identity().ID || changed.StoreSeq != 0 ||
		!strings.Contains(changed.Detail, "now records the changes of the store with store_id "+st.Identity().ID) {
		t.Fatalf("records %+v", recs)
	}
	// The new store's changes 1 and 2, unrecorded.
	for _, p := range []string{"x", "y"} {
		if err := st.SetPolicy(store.PolicyRule{Pattern: p, Action: store.PolicyDeny}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := Reconcile(f.log, st); err != nil || n != 2 {
		t.Fatalf("Reconcile = %d, %v; want the new store's 2 changes", n, err)
	}
	recs = f.records(t)
	for i, r := range recs[4:] {
		if r.Subject != []string{"x", "y"}[i] || r.StoreSeq != uint64(i+1) || r.StoreID != st.Identity().ID || r.Actor != RecoveredActor {
			t.Errorf("recovered %+v", r)
		}
	}
	if n, err := Reconcile(f.log, st); err != nil || n != 0 {
		t.Fatalf("second Reconcile = %d, %v", n, err)
	}
}

// A log from before identities: its change records carry store_seq but
// no store_id. Beside a store that adopted its identity (the same store,
// upgraded) they account for its changes; beside a store born with its
// identity they are another store's, and the log says it now follows
// the new one.
func TestReconcileOldLogWithoutStoreID(t *testing.T) {
	for _, upgraded := range []bool{true, false} {
		f := newJournalFixture(t)
		st := openStore(t)
		var j Journal = st
		if upgraded {
			j = adopted{st}
		}
		if err := st.SetPolicy(store.PolicyRule{Pattern: "x", Action: store.PolicyDeny}); err != nil {
			t.Fatal(err)
		}
		// An older toolhost recorded change 1 and stopped before its mark.
		if _, err := f.log.Append(Record{Kind: KindChange, Action: "policy_set", Subject: "x", Detail: "deny", Actor: "cli", StoreSeq: 1}); err != nil {
			t.Fatal(err)
		}
		n, err := Reconcile(f.log, j)
		recs := f.records(t)
		var actions []string
		for _, r := range recs[1:] {
			actions = append(actions, r.Action+" "+r.StoreID)
		}
		want := "audit_store_changed " + st.Identity().ID + ",policy_set " + st.Identity().ID
		if upgraded {
			want = ""
		}
		if err != nil || strings.Join(actions, ",") != want {
			t.Errorf("upgraded %v: Reconcile = %d, %v; appended %q, want %q", upgraded, n, err, actions, want)
		}
	}
}
