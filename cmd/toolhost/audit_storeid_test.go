package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/store"
)

// changeWithoutRecord changes the store of home through its API, without
// the log: a process killed between a change's commit and its record.
func changeWithoutRecord(t *testing.T, home, pattern string) {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetPolicy(store.PolicyRule{Pattern: pattern, Action: store.PolicyDeny}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// removeStore deletes home's store (its directory, key and seal anchor)
// and keeps the audit log.
func removeStore(t *testing.T, home string) {
	t.Helper()
	for _, p := range []string{"store", "store.key", "store.seal"} {
		if err := os.RemoveAll(filepath.Join(home, p)); err != nil {
			t.Fatal(err)
		}
	}
}

// storeIdentity is the identity of home's store.
func storeIdentity(t *testing.T, home string) string {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return st.Identity().ID
}

// copyStoreFiles copies the store (directory, key and seal anchor) of
// the home from into the home to.
func copyStoreFiles(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(to, "store"), 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(from, "store"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, filepath.Join("store", e.Name()))
	}
	for _, name := range append(names, "store.key", "store.seal") {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// policyRecords counts home's policy_set records per pattern.
func policyRecords(t *testing.T, home string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, r := range auditRecords(t, home) {
		if r.Action == "policy_set" {
			n[r.Subject]++
		}
	}
	return n
}

// A store deleted and made anew beside the kept log numbers its changes
// from 1 again. A change of the new store left unrecorded (killed between
// its commit and its record) within a minute of the old store's last
// records is recorded at the next open, whatever numbers the old store's
// records carry, whether or not a command opened the new store before.
// Was: Reconcile read the old store's store_seq as the new store's and
// took the change for recorded; it stayed in effect with no record.
func TestNewStoreBesideAKeptLogRecordsItsChanges(t *testing.T) {
	for _, openedFirst := range []bool{false, true} {
		home := filepath.Join(t.TempDir(), "home")
		for _, p := range []string{"a", "b", "c"} {
			cli(t, home, exitOK, "policy", "set", p, "deny") // store_seq 1, 2, 3
		}
		removeStore(t, home)
		if openedFirst {
			cli(t, home, exitOK, "plugin", "list")
		}
		changeWithoutRecord(t, home, "x") // the new store's change 1
		changeWithoutRecord(t, home, "y") // and 2
		cli(t, home, exitOK, "plugin", "list")
		got := policyRecords(t, home)
		if got["x"] != 1 || got["y"] != 1 {
			t.Errorf("opened first %v: the new store's unrecorded changes x, y have %d, %d records, want 1 each", openedFirst, got["x"], got["y"])
		}
		// The log says once that it follows the new store; the new store's
		// records carry its identity.
		id := storeIdentity(t, home)
		changed := 0
		for _, r := range auditRecords(t, home) {
			if r.Action == "audit_store_changed" && r.StoreID == id {
				changed++
			}
			if (r.Subject == "x" || r.Subject == "y") && r.StoreID != id {
				t.Errorf("opened first %v: record of the new store's change %s has store_id %q, want %s", openedFirst, r.Subject, r.StoreID, id)
			}
		}
		if changed != 1 {
			t.Errorf("opened first %v: %d audit_store_changed records for the new store, want 1", openedFirst, changed)
		}
		if out := cli(t, home, exitOK, "audit", "verify"); !strings.Contains(out, "intact") {
			t.Fatalf("audit verify: %s", out)
		}
	}
}

// The same with a real kill: a new store beside the kept log, and
// toolhost killed at each rename a policy change makes (the seal anchor
// before and after the commit, the recorded mark). At the next start
// every rule in effect has exactly one record and no other rule has one.
// Was: killed after the commit (the second rename), the rule stayed in
// effect with no record.
func TestKilledChangeOfANewStoreIsRecorded(t *testing.T) {
	needStrace(t)
	for n := 1; n <= 5; n++ {
		home := filepath.Join(t.TempDir(), "home")
		for _, p := range []string{"a", "b", "c"} {
			cli(t, home, exitOK, "policy", "set", p, "deny")
		}
		removeStore(t, home)
		cli(t, home, exitOK, "plugin", "list") // the new store
		out, _ := exec.Command("strace", "-f", "-o", "/dev/null", "-e", fmt.Sprintf("inject=renameat:signal=KILL:when=%d", n),
			"toolhost", "--home", home, "policy", "set", "k", "deny").CombinedOutput()
		cli(t, home, exitOK, "plugin", "list") // the next start
		rules := policyRulesInEffect(t, home)
		recorded := policyRecords(t, home)
		for _, r := range rules {
			if recorded[r.Pattern] != 1 {
				t.Errorf("kill at rename %d: rule %s in effect with %d records (toolhost said %q)", n, r.Pattern, recorded[r.Pattern], out)
			}
			delete(recorded, r.Pattern)
		}
		delete(recorded, "a") // the old store's
		delete(recorded, "b")
		delete(recorded, "c")
		if len(recorded) != 0 {
			t.Errorf("kill at rename %d: records of rules not in effect: %v", n, recorded)
		}
	}
}

// A backup of the store put back (directory, key and seal from one copy)
// is the same store: its identity, and a journal that ends where the
// copy's did, so its next changes reuse numbers the log holds for changes
// the restore undid. A change of the restored store left unrecorded is
// recorded at the next open, and the log says the store was restored;
// changes recorded after the restore reuse numbers, and a later
// unrecorded one is still found.
func TestRestoredStoreBackupRecordsItsChanges(t *testing.T) {
	// undone: how many recorded changes the restore undid. With one, the
	// log's last record of the store has the number of the restored
	// store's next change: it was written before that change was made.
	for _, c := range []struct {
		undone        int
		recordedAfter bool
	}{{2, false}, {2, true}, {1, false}, {1, true}} {
		recordedAfter := c.recordedAfter
		dir := t.TempDir()
		home, backup := filepath.Join(dir, "home"), filepath.Join(dir, "backup")
		cli(t, home, exitOK, "policy", "set", "a", "deny") // 1
		cli(t, home, exitOK, "policy", "set", "b", "deny") // 2
		copyStoreFiles(t, home, backup)
		cli(t, home, exitOK, "policy", "set", "c", "deny") // 3, undone by the restore
		if c.undone == 2 {
			cli(t, home, exitOK, "policy", "set", "d", "deny") // 4, undone by the restore
		}
		removeStore(t, home)
		copyStoreFiles(t, backup, home)
		if recordedAfter {
			cli(t, home, exitOK, "policy", "set", "y", "deny") // 3 again, recorded
		}
		changeWithoutRecord(t, home, "x") // 3 or 4 again, unrecorded
		cli(t, home, exitOK, "plugin", "list")
		recs := auditRecords(t, home)
		got := policyRecords(t, home)
		if got["x"] != 1 {
			t.Errorf("%+v: the restored store's unrecorded change x has %d records, want 1", c, got["x"])
		}
		says := map[int]string{
			2: "through store_seq 4, but the store's change journal ends at 3",
			1: "this store's change 3 was recorded before the store made its change 3",
		}[c.undone]
		restored := 0
		for _, r := range recs {
			if r.Action == "audit_store_restored" {
				restored++
				if !strings.Contains(r.Detail, says) || r.StoreID != storeIdentity(t, home) {
					t.Errorf("%+v: restored record %+v", c, r)
				}
			}
		}
		// Only where Reconcile reads the log and finds the store behind it
		// (no change recorded since the restore) does it say so.
		if want := map[bool]int{false: 1, true: 0}[recordedAfter]; restored != want {
			t.Errorf("%+v: %d audit_store_restored records, want %d", c, restored, want)
		}
		cli(t, home, exitOK, "audit", "verify")
	}
}

// A home's store put back after another took its place (the log holds
// the other's changes last): a change of it left unrecorded is recorded,
// and the log says it follows this store again.
func TestStorePutBackAfterAnotherIsNamed(t *testing.T) {
	dir := t.TempDir()
	home, saved := filepath.Join(dir, "home"), filepath.Join(dir, "saved")
	cli(t, home, exitOK, "policy", "set", "a", "deny")
	cli(t, home, exitOK, "policy", "set", "b", "deny")
	copyStoreFiles(t, home, saved)
	first := storeIdentity(t, home)
	removeStore(t, home)
	cli(t, home, exitOK, "policy", "set", "o", "deny") // the other store's 1
	removeStore(t, home)
	copyStoreFiles(t, saved, home)
	changeWithoutRecord(t, home, "x") // the first store's 3
	cli(t, home, exitOK, "plugin", "list")
	recs := auditRecords(t, home)
	if got := policyRecords(t, home); got["x"] != 1 {
		t.Fatalf("x has %d records, want 1", got["x"])
	}
	if len(recs) < 2 || recs[len(recs)-2].Action != "audit_store_changed" || recs[len(recs)-2].StoreID != first ||
		recs[len(recs)-1].Subject != "x" || recs[len(recs)-1].StoreSeq != 3 || recs[len(recs)-1].StoreID != first {
		t.Fatalf("last records %+v", recs[len(recs)-2:])
	}
}
