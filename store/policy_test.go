package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

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
