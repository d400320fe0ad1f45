package store

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// badger writes its write-ahead log, value log and tables through
// memory-mapped files it extends with ftruncate, so the filesystem
// allocates their blocks only when a page is first written. On a full disk
// that write is not an error but a SIGBUS, which kills the process. The
// store therefore refuses to start a write unless the filesystem has room
// for it with headroom for a memtable flush (at most one memtable's worth of
// table) and the next write-ahead log file.
const (
	memTableBytes = 8 << 20
	// minFreeBytes is what must stay free after a write's own bytes.
	minFreeBytes = 3*memTableBytes + 4<<20
	// minOpenFreeBytes is what Open needs: badger writes the header of a
	// new write-ahead log and may flush one memtable replayed from the
	// old one; reads need nothing more, so a nearly full disk still lets
	// the operator list, call and remove.
	minOpenFreeBytes = memTableBytes
)

// ErrNoSpace means the filesystem holding the store is too full to write
// to it safely. Nothing was written.
var ErrNoSpace = fmt.Errorf("store: not enough free disk space")

// freeBytes reports the space an unprivileged writer can use under dir.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// checkSpace refuses a write of about payload bytes when the filesystem of
// dir could run out during it.
func checkSpace(dir string, payload int) error {
	return checkFree(dir, uint64(minFreeBytes)+2*uint64(payload))
}

func checkFree(dir string, need uint64) error {
	free, err := freeBytes(dir)
	if err != nil {
		return fmt.Errorf("store: check free space in %s: %w", dir, err)
	}
	if free < need {
		return fmt.Errorf("%w in %s: %d MiB free, this write needs %d MiB (with room for the store's own log and tables); free some space and retry",
			ErrNoSpace, dir, free>>20, (need+1<<20-1)>>20)
	}
	return nil
}
