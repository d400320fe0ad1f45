package store_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/store"
)

// smallFilesystem mounts a tmpfs of size MiB, or skips when this process
// cannot mount one.
func smallFilesystem(t *testing.T, mib int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(mib)+"m,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes a file until the filesystem has about leave bytes free.
func fill(t *testing.T, dir string, leave uint64) string {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := st.Bavail * uint64(st.Bsize)
	path := filepath.Join(dir, "filler")
	if free > leave {
		if err := os.WriteFile(path, make([]byte, free-leave), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestFullDiskRefusesWriteAndKeepsServing fills a real filesystem: the
// write fails with ErrNoSpace (no SIGBUS in badger's memory-mapped log),
// the open store keeps answering, and once space is freed the write works.
func TestFullDiskRefusesWriteAndKeepsServing(t *testing.T) {
	fs := smallFilesystem(t, 64)
	dir := filepath.Join(fs, "store")
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	small := []byte("\x00asm\x01\x00\x00\x00 small")
	if err := st.PutPlugin(record("small", "1.0.0", small), small, store.HighWaterMark{Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, fs, 24<<20)
	big := bytes.Repeat([]byte{0xa5}, 6<<20)
	err = st.PutPlugin(record("big", "1.0.0", big), big, store.HighWaterMark{Version: "1.0.0"})
	if !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("install on a full disk: %v, want ErrNoSpace", err)
	}
	t.Logf("refused: %v", err)
	if _, err := st.Plugin("small"); err != nil {
		t.Fatalf("the store stopped answering after a refused write: %v", err)
	}
	if _, err := st.TrustSet(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPlugin(record("big", "1.0.0", big), big, store.HighWaterMark{Version: "1.0.0"}); err != nil {
		t.Fatalf("install after freeing space: %v", err)
	}
	if got, err := st.Blob(record("big", "1.0.0", big).WasmSHA256); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("big blob after reinstall: %v", err)
	}
}

// TestOpenOnFullDiskIsAnError: a store on a full disk is not opened (badger
// would write its new log file through a memory map and die of SIGBUS).
func TestOpenOnFullDiskIsAnError(t *testing.T) {
	fs := smallFilesystem(t, 32)
	fill(t, fs, 1<<20)
	_, err := store.Open(filepath.Join(fs, "store"), nil)
	if !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("Open on a full disk: %v, want ErrNoSpace", err)
	}
}

// A store on a file system remounted read-only is refused with advice
// about the file system, not sent to the backups.
func TestReadOnlyStoreAdvice(t *testing.T) {
	fs := smallFilesystem(t, 64)
	dir := filepath.Join(fs, "store")
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if out, err := exec.Command("mount", "-o", "remount,ro", fs).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only: %v %s", err, out)
	}
	_, err = store.Open(dir, nil)
	if err == nil {
		t.Fatal("a store on a read-only file system opened")
	}
	if msg := err.Error(); !strings.Contains(msg, "read-only file system: remount it read-write") || strings.Contains(msg, "backup") {
		t.Fatalf("read-only store: %v", err)
	}
}
