package home

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotPrivate means a file or directory of the home can be changed by
// another user, as ssh's StrictModes refuses.
var ErrNotPrivate = errors.New("not private to this user")

// checkPrivate refuses path when it exists and is owned by another user
// (root excepted) or can be written by group or others. what names it in
// the message.
func checkPrivate(path, what string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := privateInfo(path, what, fi); err != nil || fi.Mode().Type() != os.ModeSymlink {
		return err
	}
	// A link is as private as what it leads to: a home linked to a
	// directory others can write is as open as that directory.
	target, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	tfi, err := os.Stat(target)
	if err != nil {
		return err
	}
	if err := privateInfo(target, "the directory", tfi); err != nil {
		return fmt.Errorf("%s %s is a link: %w", what, path, err)
	}
	return nil
}

func privateInfo(path, what string, fi os.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return fmt.Errorf("%s %s is owned by uid %d, not by you (uid %d): %w; another user could replace what toolhost keeps there — use a home of your own (--home)",
			what, path, st.Uid, os.Geteuid(), ErrNotPrivate)
	}
	if fi.Mode().Type() == os.ModeSymlink {
		return nil // checkPrivate checks where it leads; files read from the home refuse links
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s %s can be written by group or others (mode %04o): %w; run `chmod go-w %s`", what, path, perm, ErrNotPrivate, path)
	}
	return nil
}

// CheckPrivate refuses a home dir (and its store) that others could
// change (ErrNotPrivate), and warns on log about parent directories they
// could write: someone who can rename a parent can swap the whole home,
// but a refusal there would break homes under shared directories that are
// set up on purpose. Open checks this itself; the CLI checks it before
// every command.
func CheckPrivate(dir string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// What it is comes before who may write it: "chmod go-w /dev/null"
	// is no answer to a home that is not a directory.
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("the toolhost home %s is not a directory; point --home or TOOLHOST_HOME at a directory (toolhost makes it if it does not exist)", dir)
	}
	if err := checkPrivate(dir, "the toolhost home"); err != nil {
		return err
	}
	if err := checkPrivate(filepath.Join(dir, "store"), "the store directory"); err != nil {
		return err
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode()&os.ModeSticky == 0 {
			if err := privateInfo(d, "the directory", fi); err != nil {
				log.Warn("WARNING: a parent of the toolhost home is not private: another user could replace the home", "home", dir, "err", err)
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
