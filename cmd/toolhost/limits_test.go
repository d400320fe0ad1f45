package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Limit flags out of range are usage errors (exit 2) naming the flag, the
// value and the range, found before anything starts; they used to become
// the defaults without a word, or (--workers 100000) start that many
// processes.
func TestLimitFlagsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--approval-timeout", "0"}, "--approval-timeout 0s is out of range: use a duration above 0 and up to 24h"},
		{[]string{"serve", "--approval-timeout", "-1s"}, "--approval-timeout -1s is out of range"},
		{[]string{"serve", "--approval-timeout", "25h"}, "--approval-timeout 25h0m0s is out of range"},
		{[]string{"serve", "--max-in-flight", "0"}, "--max-in-flight 0 is out of range: use 1 to 4096"},
		{[]string{"serve", "--max-in-flight", "-1"}, "--max-in-flight -1 is out of range: use 1 to 4096"},
		{[]string{"serve", "--max-in-flight", "4097"}, "--max-in-flight 4097 is out of range"},
		{[]string{"serve", "--max-in-flight-per-plugin", "0"}, "--max-in-flight-per-plugin 0 is out of range: use 1 to 4096"},
		{[]string{"serve", "--max-queued", "0"}, "--max-queued 0 is out of range: use 1 to 65536"},
		{[]string{"serve", "--max-queued", "-5"}, "--max-queued -5 is out of range"},
		{[]string{"serve", "--workers", "-3"}, "--workers -3 is out of range: use 1 to 256 worker processes, or 0 for the default"},
		{[]string{"serve", "--workers", "100000"}, "--workers 100000 is out of range"},
		{[]string{"mcp", "--workers", "-1"}, "--workers -1 is out of range"},
		{[]string{"mcp", "--workers", "257"}, "--workers 257 is out of range"},
		{[]string{"serve", "--sandbox-memory", "-1"}, "--sandbox-memory -1 is out of range: use 64 to 1048576 MiB, or 0 for the default (864 MiB)"},
		{[]string{"serve", "--sandbox-memory", "63"}, "--sandbox-memory 63 is out of range"},
		{[]string{"serve", "--sandbox-memory", "1048577"}, "--sandbox-memory 1048577 is out of range"},
	} {
		home := filepath.Join(t.TempDir(), "home")
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--home", home}, tc.args...), strings.NewReader(""), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Errorf("%v: the home was created before the flags were checked (%v)", tc.args, err)
		}
	}
}
