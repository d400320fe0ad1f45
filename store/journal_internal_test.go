package store

import (
	"errors"
	"path/filepath"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

// An entry journaled by a change that then fails is not kept: the entry
// is part of the change's transaction, committed with it or not at all.
func TestJournalEntryCommitsWithItsChange(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	failed := errors.New("the change failed after its entry")
	err = st.update(0, func(txn *badger.Txn) error {
		if err := txn.Set([]byte(policyRulePrefix+"x"), []byte(`{"pattern":"x","action":"deny"}`)); err != nil {
			return err
		}
		if err := journal(txn, JournalEntry{Action: "policy_set", Subject: "x", Description: "policy_set x deny"}); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("update: %v", err)
	}
	if seq, err := st.JournalSeq(); err != nil || seq != 0 {
		t.Fatalf("journal seq %d, %v after a failed change; want 0", seq, err)
	}
	if rules, err := st.PolicyRules(); err != nil || len(rules) != 0 {
		t.Fatalf("rules %v, %v after a failed change", rules, err)
	}
}
