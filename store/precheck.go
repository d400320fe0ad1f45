package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
	"golang.org/x/sys/unix"
)

// precheck runs the checks badger needs before it opens dir (checkTables,
// removeEmptyLogs), holding badger's own directory lock while they run.
//
// badger locks a store by flock(LOCK_EX) on the directory itself (its
// LOCK file only records the pid). The checks delete files and map
// tables, so they must never run on a directory another process holds: a
// live store's newest log is empty for a moment after badger creates it,
// and deleting it under that process breaks its writes. So the lock is
// probed without waiting: held elsewhere, nothing is touched and Open
// reports ErrLocked (the CLI waits and retries); free, it is kept for the
// checks, so no other process's badger can open the store under them, and
// released just before this process's badger takes it. flock locks
// belong to an open file description, so ours must be released first even
// within one process.
func precheck(opts badger.Options, log func(msg string, args ...any)) error {
	d, err := os.Open(opts.Dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return lockedError(opts.Dir)
		}
		return fmt.Errorf("store: lock %s: %w", opts.Dir, err)
	}
	if err := checkTables(opts); err != nil {
		return err
	}
	return removeEmptyLogs(opts.Dir, log)
}

// openAdvice says what to do about err, a failure of badger to open the
// store in dir. badger flattens the errors it wraps into text, so the
// cause is found in the text as well as in the chain, and by asking the
// kernel whether dir can be written. Only what is left may be damage.
func openAdvice(dir string, err error) string {
	has := func(errno syscall.Errno) bool {
		return errors.Is(err, errno) || strings.Contains(err.Error(), errno.Error())
	}
	access := unix.Access(dir, unix.W_OK)
	switch {
	case has(syscall.EROFS) || access == unix.EROFS:
		return "the store is on a read-only file system: remount it read-write, or use a toolhost home on a writable file system"
	case has(syscall.EACCES) || has(syscall.EPERM) || access == unix.EACCES:
		return fmt.Sprintf("this user (uid %d) may not write the store: run toolhost as the owner of its home, or give this user write access to %s and the files in it", os.Geteuid(), dir)
	}
	return "if the store is damaged, restore the store directory from a backup"
}

// lockedError is ErrLocked for the store in dir.
func lockedError(dir string) error {
	return fmt.Errorf("%w (%s); stop it or run this command through it", ErrLocked, dir)
}

// checkTables opens and checksums every table file before badger does.
// badger opens tables in goroutines of its own, where a damaged file (a
// truncated table: slice bounds out of range) panics beyond any recover
// and kills the process; here the same code runs in the caller's
// goroutine, where the panic, or a fault on the memory-mapped file, is an
// error.
func checkTables(opts badger.Options) error {
	ents, err := os.ReadDir(opts.Dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sst") || !e.Type().IsRegular() {
			continue
		}
		if err := checkTable(filepath.Join(opts.Dir, e.Name()), opts); err != nil {
			return fmt.Errorf("%w: table %s: %v; restore the store directory from a backup", ErrCorrupt, e.Name(), err)
		}
	}
	return nil
}

// removeEmptyLogs deletes zero-length value-log and write-ahead-log files.
// badger creates such a file and only then sizes it, so a kill in between
// leaves an empty file that badger's next Open refuses ("Create a new
// file"). An empty log holds no write, so nothing is lost.
func removeEmptyLogs(dir string, log func(msg string, args ...any)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !(strings.HasSuffix(e.Name(), ".vlog") || strings.HasSuffix(e.Name(), ".mem")) {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("store: remove the empty log %s left by an interrupted write: %w", e.Name(), err)
		}
		log("store: removed an empty log file left by an interrupted write", "file", e.Name())
	}
	return nil
}

func checkTable(path string, opts badger.Options) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable (%v)", r)
		}
	}()
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() < 16 {
		return fmt.Errorf("only %d bytes long", fi.Size())
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && err != z.NewFile {
		return err
	}
	t, err := table.OpenTable(mf, table.Options{
		ReadOnly:           true,
		BlockSize:          opts.BlockSize,
		BloomFalsePositive: opts.BloomFalsePositive,
		Compression:        opts.Compression,
		ChkMode:            options.OnTableAndBlockRead,
	})
	if err != nil {
		mf.Close(-1)
		return err
	}
	defer t.Close(-1)
	return t.VerifyChecksum()
}
