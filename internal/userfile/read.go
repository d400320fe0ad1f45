package userfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// NotRegularError means a path names something other than a regular file:
// a named pipe, a device, a socket or a directory. Its message says what
// the path is; callers add what to give instead.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a file", e.Path, KindOf(e.Mode))
}

// KindOf names what a file that is not a regular file is ("a named pipe").
func KindOf(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// TooLargeError means a file holds more than the caller's limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the limit of %d bytes", e.Path, e.Limit)
}

// EscapeError means a path inside a directory is a symbolic link that
// leads out of it (an absolute link always counts as leading out).
type EscapeError struct {
	Path, Dir, Target string
}

func (e *EscapeError) Error() string {
	return fmt.Sprintf("%s is a symbolic link to %s, outside %s", e.Path, e.Target, e.Dir)
}

// Open opens the regular file at path for reading, following symbolic
// links. It does not wait for a named pipe's writer or a device: the open
// does not block, and a descriptor that is not a regular file is closed
// and refused with a *NotRegularError.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	return checkOpened(f, path)
}

func checkOpened(f *os.File, path string) (*os.File, fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, fi, nil
}

// Read returns the contents of the regular file at path (see Open), or a
// *TooLargeError when it holds more than limit bytes.
func Read(path string, limit int64) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, limit)
}

// ReadIn is Read for the file name inside directory dir, with one more
// refusal: a symbolic link, at any step, that leads outside dir is refused
// with an *EscapeError, so what is read is a file that is in dir. Links
// that stay inside dir are followed.
func ReadIn(dir, name string, limit int64) ([]byte, error) {
	path := filepath.Join(dir, name)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		// os.Root does not export its "escapes" error: a link that is
		// there and could not be opened through the root is one.
		if !errors.Is(err, fs.ErrNotExist) {
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode().Type() == fs.ModeSymlink {
				target, _ := os.Readlink(path)
				return nil, &EscapeError{Path: path, Dir: dir, Target: target}
			}
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f, _, err = checkOpened(f, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, limit)
}

func readAll(f *os.File, path string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}
