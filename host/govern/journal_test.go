package govern

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/store"
)

// Policy changes made at the same time each record the store's journal
// number of their own change, and a refused one records nothing.
func TestPolicyChangesRecordTheirStoreSeq(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	path := filepath.Join(t.TempDir(), audit.FileName)
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	g, err := New(Options{Store: st, Audit: &audit.Recorder{Log: l, Journal: st}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("t%d_*", i)
			if err := g.SetPolicy(p, "ask", "cli"); err != nil {
				t.Error(err)
			}
			if err := g.UnsetPolicy(p, "cli"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := g.UnsetPolicy("none", "cli"); err == nil {
		t.Fatal("unset of a missing rule succeeded")
	}
	if err := g.SetPolicy("x", "maybe", "cli"); err == nil {
		t.Fatal("a bad action was set")
	}
	entries, err := st.JournalSince(0)
	if err != nil {
		t.Fatal(err)
	}
	desc := map[uint64]string{}
	for _, e := range entries {
		desc[e.Seq] = e.Description
	}
	data, _ := os.ReadFile(path)
	recs, err := audit.List(bytes.NewReader(data), audit.Filter{})
	if err != nil || len(recs) != 16 || len(entries) != 16 {
		t.Fatalf("%d records (%v), %d journal entries; want 16 each", len(recs), err, len(entries))
	}
	for _, r := range recs {
		want := "policy_unset " + r.Subject
		if r.Action == "policy_set" {
			want = "policy_set " + r.Subject + " ask"
		}
		if desc[r.StoreSeq] != want {
			t.Errorf("%s %s has store_seq %d, whose change is %q", r.Action, r.Subject, r.StoreSeq, desc[r.StoreSeq])
		}
	}
}
