package store

import (
	"errors"
	"strings"
	"testing"
)

// The advice for a store badger cannot open matches the cause: only what
// is not a read-only file system or a permission problem is sent to the
// backups.
func TestOpenAdvice(t *testing.T) {
	dir := t.TempDir() // writable: the advice comes from the error alone
	for _, tc := range []struct {
		err        string
		want, not1 string
	}{
		{`Cannot write pid file "/h/store/LOCK" err: open /h/store/LOCK: read-only file system`, "read-only file system: remount it", "backup"},
		{`Cannot write pid file "/h/store/LOCK" err: open /h/store/LOCK: permission denied`, "may not write the store: run toolhost as the owner", "backup"},
		{`While opening memtable: operation not permitted`, "may not write the store", "backup"},
		{`Manifest has bad magic`, "restore the store directory from a backup", "read-only"},
	} {
		got := openAdvice(dir, errors.New(tc.err))
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not1) {
			t.Errorf("openAdvice(%q) = %q, want %q and not %q", tc.err, got, tc.want, tc.not1)
		}
	}
}
