package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A log whose file, or write-ahead file, is deleted, moved or replaced
// while it is open refuses the next record (which would go where nobody
// reads it) and every one after, and says why; untouched, it carries on.
func TestLogRefusesWhenItsFilesAreNoLongerItsPaths(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, logPath string)
	}{
		{"log deleted", func(t *testing.T, p string) { must0(t, os.Remove(p)) }},
		{"log moved", func(t *testing.T, p string) { must0(t, os.Rename(p, p+".old")) }},
		{"log replaced by a copy", func(t *testing.T, p string) {
			data, err := os.ReadFile(p)
			must0(t, err)
			must0(t, os.Remove(p))
			must0(t, os.WriteFile(p, data, 0o600))
		}},
		{"write-ahead file deleted", func(t *testing.T, p string) { must0(t, os.Remove(walPath(p))) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			l, err := open(path, walRing+1024, fastSync)
			must0(t, err)
			defer l.Close()
			if _, err := l.Append(Record{Kind: KindCall, Tool: "before"}); err != nil {
				t.Fatal(err)
			}
			tc.tamper(t, path)
			for i := range 2 {
				_, err := l.Append(Record{Kind: KindCall, Tool: "after"})
				if err == nil || !strings.Contains(err.Error(), "no longer the file toolhost writes") {
					t.Fatalf("append %d after the tampering: %v", i, err)
				}
			}
			if l.Err() == nil {
				t.Fatal("Err is nil: the Governor would let calls run unrecorded")
			}
		})
	}
	// Untouched: records keep going.
	path := filepath.Join(t.TempDir(), FileName)
	l, err := open(path, walRing+1024, fastSync)
	must0(t, err)
	defer l.Close()
	for range 3 {
		if _, err := l.Append(Record{Kind: KindCall, Tool: "t"}); err != nil {
			t.Fatal(err)
		}
	}
}

func must0(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
