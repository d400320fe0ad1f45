package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// errNotPrivate means a file or directory of the home can be changed by
// another user, as ssh's StrictModes refuses.
var errNotPrivate = errors.New("not private to this user")

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
			what, path, st.Uid, os.Geteuid(), errNotPrivate)
	}
	if fi.Mode().Type() == os.ModeSymlink {
		return nil // checkPrivate checks where it leads; readPrivateFile refuses links
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s %s can be written by group or others (mode %04o): %w; run `chmod go-w %s`", what, path, perm, errNotPrivate, path)
	}
	return nil
}

// checkHome refuses a home (and its store) that others could change, and
// warns about parent directories they could write: someone who can rename
// a parent can swap the whole home, but a refusal there would break
// homes under shared directories that are set up on purpose.
func (g *globalOptions) checkHome() error {
	// What it is comes before who may write it: "chmod go-w /dev/null"
	// is no answer to a home that is not a directory.
	if fi, err := os.Stat(g.home); err == nil && !fi.IsDir() {
		return fmt.Errorf("the toolhost home %s is not a directory; point --home or TOOLHOST_HOME at a directory (toolhost makes it if it does not exist)", g.home)
	}
	if err := checkPrivate(g.home, "the toolhost home"); err != nil {
		return err
	}
	if err := checkPrivate(filepath.Join(g.home, "store"), "the store directory"); err != nil {
		return err
	}
	for d := filepath.Dir(g.home); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode()&os.ModeSticky == 0 {
			if err := privateInfo(d, "the directory", fi); err != nil {
				g.logger.Warn("WARNING: a parent of the toolhost home is not private: another user could replace the home", "home", g.home, "err", err)
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
