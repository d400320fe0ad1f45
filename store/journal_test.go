package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

func journalSeq(t *testing.T, st *store.Store) uint64 {
	t.Helper()
	seq, err := st.JournalSeq()
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// Every operator change the store makes adds exactly one journal entry,
// with the audit log's action, its subject and a description that names
// no secret or config value; writes that are not operator changes add
// none.
func TestJournalHasOneEntryPerOperatorChange(t *testing.T) {
	home := t.TempDir()
	st := open(t, filepath.Join(home, "store"))
	defer st.Close()
	k, _ := signing.GenerateKey(nil)
	id := k.Public().ID()
	wasm := []byte("\x00asm\x01\x00\x00\x00 journal")
	rec := record("notes", "1.2.0", wasm)
	const configValue = "https://internal.example/cfg-value-9d2e"
	changes := []struct {
		action, subject, desc string
		do                    func() error
	}{
		{"trust_add", id.String(), "trust_add " + id.String() + " curator alice", func() error {
			return st.AddTrustedKey(curator.TrustedKey{Name: "alice", Key: k.Public(), AddedAt: time.Now()})
		}},
		{"install", "notes", "install notes 1.2.0 " + rec.Digest.String(), func() error {
			return st.PutPlugin(rec, wasm, store.HighWaterMark{Version: "1.2.0"})
		}},
		{"install", "notes", "install notes 1.2.0 " + rec.Digest.String() + " with new signatures (same content)", func() error {
			return st.SetSignatures("notes", rec.Digest, []byte(`{"signatures":[]}`))
		}},
		{"trust_revoke", id.String(), "trust_revoke " + id.String(), func() error { return st.Revoke(id, time.Now()) }},
		{"trust_unrevoke", id.String(), "trust_unrevoke " + id.String(), func() error { return st.Unrevoke(id) }},
		{"trust_threshold", "2", "trust_threshold 2", func() error { return st.SetThreshold(2) }},
		{"policy_set", "delete_*", "policy_set delete_* ask", func() error {
			return st.SetPolicy(store.PolicyRule{Pattern: "delete_*", Action: store.PolicyAsk})
		}},
		{"policy_unset", "delete_*", "policy_unset delete_*", func() error { return st.UnsetPolicy("delete_*") }},
		{"config_set", "notes", "config_set notes set endpoint, units", func() error {
			return st.SetConfig("notes", map[string]string{"endpoint": configValue, "units": "metric"})
		}},
		{"config_set", "notes", "config_set notes set units; unset endpoint", func() error {
			return st.SetConfig("notes", map[string]string{"units": "imperial"})
		}},
		{"secret_set", "notes", "secret_set notes api_key", func() error { return st.SetSecret("notes", "api_key", testSecret) }},
		{"secret_remove", "notes", "secret_remove notes api_key", func() error { return st.RemoveSecret("notes", "api_key") }},
		{"trust_remove", id.String(), "trust_remove " + id.String(), func() error { return st.RemoveTrustedKey(id) }},
		{"remove", "notes", "remove notes (1.2.0 " + rec.Digest.String() + ")", func() error { return st.RemovePlugin("notes") }},
	}
	for i, c := range changes {
		before := journalSeq(t, st)
		if err := c.do(); err != nil {
			t.Fatalf("change %d (%s): %v", i, c.action, err)
		}
		if after := journalSeq(t, st); after != before+1 {
			t.Fatalf("%s: journal seq %d → %d, want one entry", c.action, before, after)
		}
		es, err := st.JournalSince(before)
		if err != nil || len(es) != 1 {
			t.Fatalf("%s: JournalSince(%d) = %v, %v", c.action, before, es, err)
		}
		e := es[0]
		if e.Seq != before+1 || e.Action != c.action || e.Subject != c.subject || e.Description != c.desc || e.Time.IsZero() {
			t.Errorf("%s: entry %+v, want action %q subject %q description %q", c.action, e, c.action, c.subject, c.desc)
		}
		for _, v := range []string{testSecret, configValue, "metric", "imperial"} {
			if strings.Contains(e.Description, v) {
				t.Errorf("%s: entry %q holds a value", c.action, e.Description)
			}
		}
	}

	// Internal writes and changes that change nothing add no entry.
	before := journalSeq(t, st)
	for name, do := range map[string]func() error{
		"quarantine":    func() error { return st.Quarantine("notes", "test") },
		"mark recorded": func() error { return st.MarkJournalRecorded(before) },
		"same key added again": func() error {
			if err := st.AddTrustedKey(curator.TrustedKey{Name: "bob", Key: k.Public(), AddedAt: time.Now()}); err != nil {
				return err
			}
			return st.AddTrustedKey(curator.TrustedKey{Name: "bob", Key: k.Public(), AddedAt: time.Now()})
		},
	} {
		want := journalSeq(t, st)
		if name == "same key added again" {
			want++ // the first add is a change
		}
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := journalSeq(t, st); got != want {
			t.Errorf("%s: journal seq %d, want %d", name, got, want)
		}
	}
}

// A change the store refuses leaves no journal entry: the entry is
// written in the change's own transaction.
func TestRefusedChangeLeavesNoJournalEntry(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "store"))
	defer st.Close()
	k1, _ := signing.GenerateKey(nil)
	k2, _ := signing.GenerateKey(nil)
	if err := st.AddTrustedKey(curator.TrustedKey{Name: "alice", Key: k1.Public()}); err != nil {
		t.Fatal(err)
	}
	wasm := []byte("\x00asm\x01\x00\x00\x00 refused")
	rec := record("notes", "1.0.0", wasm)
	before := journalSeq(t, st)
	for name, do := range map[string]func() error{
		"name of another key":   func() error { return st.AddTrustedKey(curator.TrustedKey{Name: "ALICE", Key: k2.Public()}) },
		"key renamed":           func() error { return st.AddTrustedKey(curator.TrustedKey{Name: "carol", Key: k1.Public()}) },
		"remove not installed":  func() error { return st.RemovePlugin("notes") },
		"signatures of nothing": func() error { return st.SetSignatures("notes", rec.Digest, nil) },
		"wasm mismatch":         func() error { return st.PutPlugin(rec, append(wasm, 0), store.HighWaterMark{}) },
		"bad policy action":     func() error { return st.SetPolicy(store.PolicyRule{Pattern: "a", Action: "maybe"}) },
		"unset missing rule":    func() error { return st.UnsetPolicy("a") },
		"threshold 0":           func() error { return st.SetThreshold(0) },
		"unrevoke not revoked":  func() error { return st.Unrevoke(k1.Public().ID()) },
		"remove unknown secret": func() error { return st.RemoveSecret("notes", "X") },
	} {
		if err := do(); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if got := journalSeq(t, st); got != before {
			t.Errorf("%s: refused, yet journal seq %d → %d", name, before, got)
		}
	}
}

// The journal keeps its last 64 entries, numbered without a gap, and the
// numbering goes on across reopens.
func TestJournalIsBoundedAndSurvivesReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st := open(t, dir)
	const n = 70
	for i := 1; i <= n; i++ {
		if i == n/2 {
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st = open(t, dir)
		}
		if err := st.SetPolicy(store.PolicyRule{Pattern: fmt.Sprintf("t%d", i), Action: store.PolicyDeny}); err != nil {
			t.Fatal(err)
		}
	}
	defer st.Close()
	es, err := st.JournalSince(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 64 || es[0].Seq != n-63 || es[63].Seq != n {
		t.Fatalf("kept %d entries, %d…%d; want 64, %d…%d", len(es), es[0].Seq, es[len(es)-1].Seq, n-63, n)
	}
	for i, e := range es {
		if want := fmt.Sprintf("policy_set t%d deny", e.Seq); e.Seq != es[0].Seq+uint64(i) || e.Description != want {
			t.Fatalf("entry %d: %+v, want seq %d %q", i, e, es[0].Seq+uint64(i), want)
		}
	}
	if es, err := st.JournalSince(n); err != nil || len(es) != 0 {
		t.Fatalf("JournalSince(last) = %v, %v", es, err)
	}
}

// The recorded mark only goes up, and survives a reopen.
func TestJournalRecordedMark(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st := open(t, dir)
	if m, err := st.JournalRecorded(); err != nil || m != 0 {
		t.Fatalf("new store: mark %d, %v", m, err)
	}
	for _, m := range []uint64{3, 2, 5} {
		if err := st.MarkJournalRecorded(m); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	st = open(t, dir)
	defer st.Close()
	if m, err := st.JournalRecorded(); err != nil || m != 5 {
		t.Fatalf("mark %d, %v; want 5", m, err)
	}
	if !errors.Is(st.MarkJournalRecorded(6), nil) {
		t.Fatal("mark 6 refused")
	}
}
