package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/store"
)

// store_seq is a member like the others: after actor, left out when 0,
// covered by the hash, and the documented cut-and-hash recipe still gives
// the hash; a zero written out is not canonical.
func TestStoreSeqMember(t *testing.T) {
	r := Record{Seq: 3, Time: time.Unix(1764000000, 0).UTC(), Prev: strings.Repeat("a", 64), Kind: KindChange,
		Action: "install", Subject: "notes", Detail: "version 1.2.0", Actor: "cli", StoreSeq: 42}
	line, hash, err := encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`"actor":"cli","store_seq":42,"hash":"`+hash+`"}`)) {
		t.Fatalf("line %s", line)
	}
	cut := regexp.MustCompile(`,"hash":"[0-9a-f]{64}"}$`).ReplaceAll(line, []byte("}"))
	if sum := sha256.Sum256(cut); hex.EncodeToString(sum[:]) != hash {
		t.Fatal("the README's recipe does not give the hash of a record with store_seq")
	}
	back, err := ParseLine(line)
	if err != nil || back.StoreSeq != 42 {
		t.Fatalf("ParseLine = %+v, %v", back, err)
	}
	r.StoreSeq = 0
	line, _, _ = encode(r)
	if bytes.Contains(line, []byte("store_seq")) {
		t.Fatalf("store_seq 0 written: %s", line)
	}
	for _, bad := range []string{`,"store_seq":0`, `,"store_seq":-1`, `,"store_seq":1.5`, `,"store_seq":"1"`} {
		body := bytes.Replace(line, []byte(`,"hash"`), []byte(bad+`,"hash"`), 1)
		if _, err := ParseLine(body); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

type journalFixture struct {
	st  *store.Store
	log *Log
	rec *Recorder
}

func newJournalFixture(t *testing.T) *journalFixture {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := open(filepath.Join(dir, FileName), smallRing, fastSync)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	// As toolhost does where it opens them: the store is announced to the
	// log (which is empty: nothing is appended).
	if n, err := Reconcile(l, st); err != nil || n != 0 {
		t.Fatalf("first Reconcile = %d, %v", n, err)
	}
	return &journalFixture{st: st, log: l, rec: &Recorder{Log: l, Journal: st}}
}

// records reads the log's records.
func (f *journalFixture) records(t *testing.T) []Record {
	t.Helper()
	data, err := os.ReadFile(f.log.Path())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(bytes.NewReader(data), ""); err != nil {
		t.Fatalf("log does not verify: %v", err)
	}
	recs, err := List(bytes.NewReader(data), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func (f *journalFixture) setPolicy(pattern string) func() (string, string, string, error) {
	return func() (string, string, string, error) {
		return "policy_set", pattern, "deny", f.st.SetPolicy(store.PolicyRule{Pattern: pattern, Action: store.PolicyDeny})
	}
}

// Concurrent changes each record the journal number of their own change.
func TestJournaledRecordsItsOwnChangesNumber(t *testing.T) {
	f := newJournalFixture(t)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.rec.Journaled("cli", f.setPolicy(fmt.Sprintf("t%d", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	entries, err := f.st.JournalSince(0)
	if err != nil || len(entries) != 12 {
		t.Fatalf("journal %v, %v", entries, err)
	}
	bySeq := map[uint64]store.JournalEntry{}
	for _, e := range entries {
		bySeq[e.Seq] = e
	}
	recs := f.records(t)
	if len(recs) != 12 {
		t.Fatalf("%d records, want 12", len(recs))
	}
	for _, r := range recs {
		if e := bySeq[r.StoreSeq]; e.Description != "policy_set "+r.Subject+" deny" {
			t.Errorf("record of %s has store_seq %d, whose entry is %q", r.Subject, r.StoreSeq, e.Description)
		}
	}
	if m, _ := f.st.JournalRecorded(); m != 12 {
		t.Errorf("recorded mark %d, want 12", m)
	}
}

// A change that fails after the store made it is recorded, saying so; one
// that fails before is not; one that changes nothing is recorded without
// a store_seq.
func TestJournaledRecordsWhatTheStoreMade(t *testing.T) {
	f := newJournalFixture(t)
	later := errors.New("reloading failed")
	err := f.rec.Journaled("cli", func() (string, string, string, error) {
		a, s, d, err := f.setPolicy("made")()
		if err == nil {
			err = later
		}
		return a, s, d, err
	})
	if !errors.Is(err, later) {
		t.Fatalf("Journaled: %v, want the change's error", err)
	}
	refused := f.rec.Journaled("cli", func() (string, string, string, error) {
		return "policy_set", "bad", "maybe", f.st.SetPolicy(store.PolicyRule{Pattern: "bad", Action: "maybe"})
	})
	if refused == nil {
		t.Fatal("a refused change succeeded")
	}
	if err := f.rec.Journaled("cli", func() (string, string, string, error) { return "trust_add", "k", "nothing new", nil }); err != nil {
		t.Fatal(err)
	}
	recs := f.records(t)
	if len(recs) != 2 || recs[0].StoreSeq != 1 || !strings.Contains(recs[0].Detail, "made in the store, but then: reloading failed") ||
		recs[1].StoreSeq != 0 || recs[1].Action != "trust_add" {
		t.Fatalf("records %+v", recs)
	}
}

// No change is made while the log refuses records.
func TestJournaledRefusesWhileTheLogRefuses(t *testing.T) {
	f := newJournalFixture(t)
	f.log.Close()
	ran := false
	err := f.rec.Journaled("cli", func() (string, string, string, error) { ran = true; return "policy_set", "x", "", nil })
	if err == nil || ran || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Journaled on a closed log: ran %v, %v", ran, err)
	}
}

// failingMark is a journal whose recorded mark cannot be written: a kill
// between a record and its mark.
type failingMark struct{ *store.Store }

func (failingMark) MarkJournalRecorded(uint64) error { return errors.New("killed") }

// Reconcile records each change the store made and the log lacks, once;
// a change recorded but not marked is not recorded again; an older log
// without store_seq gets the change made after it.
func TestReconcile(t *testing.T) {
	f := newJournalFixture(t)
	// An older log: records without store_seq.
	for i := range 50 {
		if err := f.rec.Change("approval_approve", fmt.Sprint(i), "", "cli"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := Reconcile(f.log, f.st); err != nil || n != 0 {
		t.Fatalf("nothing pending: Reconcile = %d, %v", n, err)
	}
	// Killed after the store's change: no record.
	if _, _, _, err := f.setPolicy("lost")(); err != nil {
		t.Fatal(err)
	}
	n, err := Reconcile(f.log, f.st)
	if err != nil || n != 1 {
		t.Fatalf("Reconcile = %d, %v; want 1", n, err)
	}
	recs := f.records(t)
	last := recs[len(recs)-1]
	if last.Action != "policy_set" || last.Subject != "lost" || last.Actor != RecoveredActor || last.StoreSeq != 1 ||
		!strings.HasPrefix(last.Detail, "recovered at start: made in the store at ") ||
		!strings.HasSuffix(last.Detail, "but not recorded before toolhost stopped: policy_set lost deny") {
		t.Fatalf("recovered record %+v", last)
	}
	if n, err := Reconcile(f.log, f.st); err != nil || n != 0 {
		t.Fatalf("second Reconcile = %d, %v; want 0", n, err)
	}
	// Killed after the record, before the mark: recorded once.
	f.rec.Journal = failingMark{f.st}
	if err := f.rec.Journaled("cli", f.setPolicy("kept")); err != nil {
		t.Fatal(err)
	}
	before := len(f.records(t))
	if n, err := Reconcile(f.log, f.st); err != nil || n != 0 {
		t.Fatalf("recorded, not marked: Reconcile = %d, %v; want 0", n, err)
	}
	if m, _ := f.st.JournalRecorded(); m != 2 || len(f.records(t)) != before {
		t.Fatalf("mark %d, records %d → %d", m, before, len(f.records(t)))
	}
}

// Changes that fell out of the journal's window are reported as a gap;
// the rest are recovered.
func TestReconcileReportsAGap(t *testing.T) {
	f := newJournalFixture(t)
	for i := range 70 {
		if _, _, _, err := f.setPolicy(fmt.Sprintf("p%d", i))(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := Reconcile(f.log, f.st)
	if err != nil || n != 65 {
		t.Fatalf("Reconcile = %d, %v; want a gap and 64 changes", n, err)
	}
	recs := f.records(t)
	if recs[0].Action != "audit_journal_gap" || !strings.Contains(recs[0].Detail, "changes 1 to 6,") || recs[1].StoreSeq != 7 || recs[64].StoreSeq != 70 {
		t.Fatalf("first %+v, second %+v", recs[0], recs[1])
	}
}
