package userfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ErrLocked means another process held a file's lock for longer than
// Update waits.
var ErrLocked = errors.New("userfile: locked by another process")

// LockWait is how long Update waits for another process's lock. A holder
// keeps it only to read, change and rename a file: milliseconds.
const LockWait = 30 * time.Second

// Replace makes the file at path hold data, atomically: readers see the old
// contents or the new, never a part. When path is a symbolic link, the file
// it leads to is replaced and the link stays. A new file gets mode 0644
// (less the umask); an existing file keeps its permissions.
func Replace(path string, data []byte) error {
	target, err := resolve(path, false)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return replace(target, data, 0o644, false)
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return replace(target, data, fi.Mode().Perm(), true)
}

// Update replaces the regular file at path with what change makes of its
// contents (at most limit bytes; see Read), holding an exclusive advisory
// lock on it from before the read until after the rename, so concurrent
// Updates of one file apply one after the other. change returns nil to
// leave the file as it is. A symbolic link is followed as by Replace.
// Update waits for another holder's lock up to LockWait, or until ctx is
// done.
func Update(ctx context.Context, path string, limit int64, change func(old []byte) ([]byte, error)) error {
	target, err := resolve(path, true)
	if err != nil {
		return err
	}
	for {
		f, fi, err := Open(target)
		if err != nil {
			return err
		}
		if err := lock(ctx, f, path); err != nil {
			f.Close()
			return err
		}
		// Another Update may have renamed a new file over target while
		// this one waited: its lock is on the file that was replaced.
		if now, err := os.Stat(target); err != nil || !os.SameFile(fi, now) {
			f.Close()
			continue
		}
		err = func() error {
			defer f.Close() // releases the lock, after the rename
			old, err := readAll(f, path, limit)
			if err != nil {
				return err
			}
			data, err := change(old)
			if err != nil || data == nil {
				return err
			}
			return replace(target, data, fi.Mode().Perm(), true)
		}()
		return err
	}
}

func lock(ctx context.Context, f *os.File, path string) error {
	deadline := time.Now().Add(LockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s has been locked for %s by another toolhost process; wait for it to finish, then run the command again", ErrLocked, path, LockWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// resolve returns the file a path leads to: path itself, or the end of
// its chain of symbolic links. A link that leads nowhere is refused (when
// mustExist, so is a path that does not exist).
func resolve(path string, mustExist bool) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) && !mustExist {
		return path, nil
	}
	if err != nil {
		return "", err
	}
	if fi.Mode().Type() != fs.ModeSymlink {
		return path, nil
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		link, _ := os.Readlink(path)
		return "", fmt.Errorf("%s is a symbolic link to %s, which cannot be followed (%v): point the link at an existing file, or remove it", path, link, errors.Unwrap(err))
	}
	return target, nil
}

// replace writes data to a new temporary file next to target, created
// exclusively (O_EXCL, so no file or link already there is written
// through), syncs it and renames it over target. The new file has mode
// perm, less the umask unless keepPerm (target's own permissions).
func replace(target string, data []byte, perm fs.FileMode, keepPerm bool) error {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	// Not os.CreateTemp: it creates 0600, and a new bundle should get 0644
	// less the user's umask, which only the kernel applies at creation.
	var f *os.File
	var tmp string
	for range 100 {
		tmp = filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		var err error
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create a temporary file next to %s: %w", target, err)
		}
	}
	if f == nil {
		return fmt.Errorf("create a temporary file next to %s: 100 names taken; remove the .%s.tmp-* files there", target, base)
	}
	err := func() error {
		if keepPerm { // OpenFile's mode was reduced by the umask
			if err := f.Chmod(perm); err != nil {
				return err
			}
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", target, err)
	}
	// Make the rename itself durable; a directory that cannot be synced
	// (some file systems refuse) still holds the new file.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
