package store_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/toolhost/toolhost/store"
)

func TestPolicyRulesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir)
	at := time.Unix(1700000000, 0)
	for _, r := range []store.PolicyRule{{Pattern: "delete_*", Action: "deny", SetAt: at}, {Pattern: "delete_note", Action: "ask", SetAt: at}} {
		if err := st.SetPolicy(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetPolicy(store.PolicyRule{Pattern: "delete_*", Action: "allow"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = open(t, dir)
	defer st.Close()
	rules, err := st.PolicyRules()
	if err != nil || len(rules) != 2 || rules[0].Pattern != "delete_*" || rules[0].Action != "allow" || rules[1].Action != "ask" {
		t.Fatalf("rules = %+v, %v", rules, err)
	}
	if err := st.UnsetPolicy("delete_note"); err != nil {
		t.Fatal(err)
	}
	if err := st.UnsetPolicy("delete_note"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unset twice: %v", err)
	}
	for _, bad := range []store.PolicyRule{{Pattern: "a/b", Action: "deny"}, {Pattern: "x", Action: "maybe"}, {Pattern: "", Action: "deny"}} {
		if err := st.SetPolicy(bad); err == nil {
			t.Errorf("SetPolicy(%+v) accepted", bad)
		} else if !strings.Contains(err.Error(), "use") {
			t.Errorf("error does not say what to do: %v", err)
		}
	}
}

// A policy rule changed or deleted outside toolhost fails closed: dropping
// a deny (or turning an ask into an allow) must not go unnoticed.
func TestPolicyRuleEditedOutsideToolhostFailsClosed(t *testing.T) {
	for name, edit := range map[string]func(txn *badger.Txn) error{
		"deny deleted": func(txn *badger.Txn) error { return txn.Delete([]byte("policy/rule/delete_*")) },
		"deny to allow": func(txn *badger.Txn) error {
			return txn.Set([]byte("policy/rule/delete_*"), []byte(`{"pattern":"delete_*","action":"allow"}`))
		},
		"allow all added": func(txn *badger.Txn) error {
			return txn.Set([]byte("policy/rule/*"), []byte(`{"pattern":"*","action":"allow"}`))
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			st := open(t, dir)
			if err := st.SetPolicy(store.PolicyRule{Pattern: "delete_*", Action: "deny"}); err != nil {
				t.Fatal(err)
			}
			st.Close()
			rawEdit(t, dir, edit)
			st, err := store.Open(dir, nil)
			if err == nil {
				_, err = st.PolicyRules()
				st.Close()
			}
			if !errors.Is(err, store.ErrTampered) {
				t.Fatalf("after %s: %v, want ErrTampered", name, err)
			}
		})
	}
}
