package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// cli runs toolhost in this process in home and returns its exit code and
// stderr, failing the test unless the code is want.
func cli(t *testing.T, home string, want int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"--home", home}, args...), strings.NewReader(""), &stdout, &stderr)
	if code != want {
		t.Fatalf("toolhost %s: exit %d, want %d; stderr %s", strings.Join(args, " "), code, want, stderr.String())
	}
	return stdout.String() + stderr.String()
}

// auditRecords reads and verifies home's audit log.
func auditRecords(t *testing.T, home string) []audit.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(home, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(bytes.NewReader(data), ""); err != nil {
		t.Fatalf("audit log does not verify: %v", err)
	}
	recs, err := audit.List(bytes.NewReader(data), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A change made in the store whose process stopped before its audit
// record (simulated here by changing the store through its API, without
// the log) is recorded by the next command that opens the store, once,
// and the log still verifies. Was: the change stayed in effect with no
// record, and `audit verify` said intact.
func TestStoreChangeWithoutRecordIsRecordedAtNextOpen(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	cli(t, home, exitOK, "policy", "set", "a", "deny")
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := signing.GenerateKey(nil)
	if err := st.SetPolicy(store.PolicyRule{Pattern: "delete_*", Action: store.PolicyAllow}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddTrustedKey(curator.TrustedKey{Name: "mallory", Key: k.Public(), AddedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before := len(auditRecords(t, home))

	cli(t, home, exitOK, "plugin", "list")
	recs := auditRecords(t, home)
	if len(recs) != before+2 {
		t.Fatalf("%d records after the next open, want %d: %+v", len(recs), before+2, recs)
	}
	for i, want := range []struct {
		action, subject, desc string
		seq                   uint64
	}{
		{"policy_set", "delete_*", "policy_set delete_* allow", 2},
		{"trust_add", k.Public().ID().String(), "trust_add " + k.Public().ID().String() + " curator mallory", 3},
	} {
		r := recs[before+i]
		if r.Action != want.action || r.Subject != want.subject || r.Actor != "toolhost" || r.StoreSeq != want.seq ||
			!strings.HasPrefix(r.Detail, "recovered at start: made in the store at ") ||
			!strings.HasSuffix(r.Detail, " but not recorded before toolhost stopped: "+want.desc) {
			t.Errorf("recovered record %d: %+v", i, r)
		}
	}
	if out := cli(t, home, exitOK, "audit", "verify"); !strings.Contains(out, fmt.Sprintf("intact: %d records", before+2)) {
		t.Fatalf("audit verify: %s", out)
	}
	cli(t, home, exitOK, "trust", "list")
	if n := len(auditRecords(t, home)); n != before+2 {
		t.Fatalf("a second open appended %d records", n-before-2)
	}
}

// Changes made through the CLI are recorded once each, with the store's
// identity and journal number of their change, and the next open
// recovers nothing.
func TestCLIChangesCarryTheirStoreSeq(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	bundle := filepath.Join(dir, "time.plugin")
	if err := os.WriteFile(bundle, testplugins.Bundle(t, "time").Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cli(t, home, exitOK, "curator", "keygen", "alice", "--no-passphrase", "--out", filepath.Join(dir, "keys"))
	steps := [][]string{
		{"trust", "add", filepath.Join(dir, "keys", "alice.pub")},
		{"policy", "set", "delete_*", "ask"},
		{"--dev-allow-unsigned", "plugin", "install", bundle},
		{"policy", "unset", "delete_*"},
		{"--dev-allow-unsigned", "plugin", "remove", "time"},
	}
	for _, args := range steps {
		cli(t, home, exitOK, args...)
	}
	cli(t, home, exitOK, "plugin", "list")
	recs := auditRecords(t, home)
	id := storeIdentity(t, home)
	var actions []string
	for i, r := range recs {
		actions = append(actions, r.Action)
		if r.Actor != "cli" || r.StoreSeq != uint64(i+1) || r.StoreID != id {
			t.Errorf("record %d (%s %s): actor %q, store_seq %d, store_id %q; want cli, %d, %s", i, r.Action, r.Subject, r.Actor, r.StoreSeq, r.StoreID, i+1, id)
		}
	}
	if got := strings.Join(actions, " "); got != "trust_add policy_set install policy_unset remove" {
		t.Fatalf("records: %s", got)
	}
}

// A real kill at each rename a policy change makes (the store's seal
// anchor, before and after its commit, and its recorded mark) leaves the
// home consistent at the next start: every rule in effect has exactly one
// policy_set record, and no rule that is not in effect has one.
func TestKilledChangeIsRecordedAtNextOpen(t *testing.T) {
	needStrace(t)
	home := filepath.Join(t.TempDir(), "home")
	cli(t, home, exitOK, "policy", "set", "a", "deny")
	for n := 1; n <= 5; n++ {
		pattern := fmt.Sprintf("k%d", n)
		cmd := exec.Command("strace", "-f", "-o", "/dev/null", "-e", fmt.Sprintf("inject=renameat:signal=KILL:when=%d", n),
			"toolhost", "--home", home, "policy", "set", pattern, "deny")
		out, _ := cmd.CombinedOutput()
		cli(t, home, exitOK, "plugin", "list") // the next start
		rules := policyRulesInEffect(t, home)
		inEffect := map[string]bool{}
		for _, r := range rules {
			inEffect[r.Pattern] = true
		}
		recorded := map[string]int{}
		for _, r := range auditRecords(t, home) {
			if r.Action == "policy_set" {
				recorded[r.Subject]++
			}
		}
		for p := range inEffect {
			if recorded[p] != 1 {
				t.Errorf("kill at rename %d: rule %s in effect with %d records (toolhost said %q)", n, p, recorded[p], out)
			}
		}
		for p := range recorded {
			if !inEffect[p] {
				t.Errorf("kill at rename %d: rule %s recorded but not in effect", n, p)
			}
		}
	}
	// The kill at the second rename (after the store's commit, before the
	// record) is the window: its change is in effect and was recovered.
	recovered := 0
	for _, r := range auditRecords(t, home) {
		if r.Actor == "toolhost" && r.Subject == "k2" {
			recovered++
		}
	}
	if recovered != 1 {
		t.Errorf("the change killed after its commit was recovered %d times, want once", recovered)
	}
}

// needStrace skips a test that kills toolhost at a system call where
// strace cannot run.
func needStrace(t *testing.T) {
	t.Helper()
	if err := exec.Command("strace", "-f", "-o", "/dev/null", "true").Run(); err != nil {
		t.Skipf("needs a working strace to kill toolhost at a system call: %v", err)
	}
}

// policyRulesInEffect reads the policy rules of home's store directly.
func policyRulesInEffect(t *testing.T, home string) []store.PolicyRule {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rules, err := st.PolicyRules()
	if err != nil {
		t.Fatal(err)
	}
	return rules
}
