package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The records a log's open appends about itself (audit_unchecked_start,
// audit_repair) are not records made beside another store: a first start
// killed after it made the store and before the log's write-ahead file
// leaves a new store beside an empty log, which its next open starts with
// audit_unchecked_start. The store is not announced as replacing another
// one then; a log with earlier records before such a start still is.
func TestNewStoreBesideOnlyTheLogsOwnStartRecords(t *testing.T) {
	for name, tc := range map[string]struct {
		before   []Record // records an earlier run left, with its write-ahead file lost
		torn     bool     // a torn last line after them (audit_repair)
		kept     bool     // opened as a kept log (audit_unchecked_start when empty)
		announce bool
	}{
		"empty kept log":                {kept: true},
		"torn line only":                {torn: true},
		"torn line only, kept":          {torn: true, kept: true},
		"records, then unchecked":       {before: []Record{{Kind: KindChange, Action: "policy_set", Subject: "x", Actor: "cli", StoreSeq: 1}}, kept: true, announce: true},
		"records, then a torn line":     {before: []Record{{Kind: KindChange, Action: "policy_set", Subject: "x", Actor: "cli", StoreSeq: 1}}, torn: true, announce: true},
		"a call record, then unchecked": {before: []Record{{Kind: KindCall, Tool: "t", Outcome: "ok"}}, kept: true, announce: true},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := Create(path); err != nil {
				t.Fatal(err)
			}
			if len(tc.before) > 0 {
				l, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range tc.before {
					if _, err := l.Append(r); err != nil {
						t.Fatal(err)
					}
				}
				l.Close()
			}
			// The write-ahead file is lost (never made, or a kill before it).
			if err := os.Remove(walPath(path)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if tc.torn {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(`{"seq":`)
				f.Close()
			}
			var l *Log
			var err error
			if tc.kept {
				l, err = OpenKept(path, "the home's store existed")
			} else {
				l, err = Open(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			st := openStore(t) // born with its identity (not adopted)
			if _, err := Reconcile(l, st); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(bytes.NewReader(data), ""); err != nil {
				t.Fatalf("log does not verify: %v", err)
			}
			var recs []Record
			for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
				r, err := ParseLine(line)
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, r)
			}
			changed := 0
			for _, r := range recs {
				if r.Action == "audit_store_changed" {
					changed++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.announce]; changed != want {
				t.Fatalf("%d audit_store_changed records, want %d: %+v", changed, want, recs)
			}
			if n, err := Reconcile(l, st); err != nil || n != 0 {
				t.Fatalf("second Reconcile = %d, %v", n, err)
			}
		})
	}
}
