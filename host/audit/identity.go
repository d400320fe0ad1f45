package audit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The files a Log writes must stay the ones its path names. A log deleted,
// moved or replaced while toolhost runs would otherwise take every later
// record into a file nobody will read: the records vanish with the
// process, and only the next start notices (a missing log, a cut one).
// Before each write the leader of a sync checks both paths, with two
// stat calls and no allocation; a mismatch makes the log refuse records,
// so the Governor refuses calls and changes (Err) until an operator puts
// the files back or restarts toolhost, whose start says what it finds.

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

func idOf(f *os.File) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), st.Ino}, nil
}

// samePath reports whether path still names the file id.
func samePath(path string, id fileID) bool {
	var st unix.Stat_t
	return unix.Stat(path, &st) == nil && uint64(st.Dev) == id.dev && st.Ino == id.ino
}

// checkFiles returns an error when the log's or its write-ahead file's
// path no longer names the file the log writes.
func (l *Log) checkFiles() error {
	for _, c := range []struct {
		path string
		id   fileID
	}{{l.path, l.fileID}, {l.wal.path, l.walID}} {
		if !samePath(c.path, c.id) {
			return fmt.Errorf("audit: %s is no longer the file toolhost writes (it was deleted, moved or replaced while toolhost ran), so no record can be written where it will be read: calls and changes are refused until you put the file back or restart toolhost, whose start says what it finds", c.path)
		}
	}
	return nil
}
