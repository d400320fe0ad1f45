package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/audit"
)

// Every command that opens the store, the long-running ones included,
// refuses a home whose audit log and write-ahead file were both deleted:
// exit 3 (as audit verify), naming the missing log, and nothing is
// created in its place. They used to start a new empty log that verified
// as intact.
func TestErasedAuditLogStopsEveryStoreOpener(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	run1 := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--home", home}, args...), strings.NewReader(""), &stdout, &stderr)
		return code, stderr.String()
	}
	if code, stderr := run1("policy", "set", "a", "deny"); code != exitOK {
		t.Fatalf("policy set in a new home: exit %d: %s", code, stderr)
	}
	logPath := filepath.Join(home, audit.FileName)
	for _, p := range []string{logPath, logPath + ".wal"} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"plugin", "list"},
		{"trust", "list"},
		{"policy", "set", "b", "deny"},
		{"call", "get_current_time", "{}"},
		{"serve", "--addr", "127.0.0.1:0"},
		{"mcp"},
		{"audit", "verify"},
	} {
		code, stderr := run1(args...)
		if code != exitRefused || !strings.Contains(stderr, "audit log is missing") {
			t.Errorf("%q: exit %d, want %d (audit log missing); stderr %q", args, code, exitRefused, stderr)
		}
		if _, err := os.Lstat(logPath); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%q created %s", args, logPath)
		}
	}
}
