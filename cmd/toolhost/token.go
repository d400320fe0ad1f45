package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/toolhost/toolhost/home"
)

// readPrivateFile reads at most limit bytes of a regular file that only
// this user owns and can read or write, without following a symlink.
func readPrivateFile(path, what string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s %s is a symbolic link: %w; delete it", what, path, home.ErrNotPrivate)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is not a regular file; delete it", what, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s %s is owned by uid %d, not by you: %w; delete it and run again to create a new one", what, path, st.Uid, home.ErrNotPrivate)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s %s can be read by group or others (mode %04o): %w; delete it and run again to create a new one (it may have been seen)", what, path, fi.Mode().Perm(), home.ErrNotPrivate)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s %s is larger than %d bytes", what, path, limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// apiToken returns $TOOLHOST_TOKEN, or the token in HOME/token, creating
// it (0600) on first use.
func (g *globalOptions) apiToken() (token, source string, err error) {
	if t := os.Getenv("TOOLHOST_TOKEN"); t != "" {
		if len(t) < 16 {
			return "", "", errors.New("TOOLHOST_TOKEN is shorter than 16 characters: use a long random value")
		}
		return t, "$TOOLHOST_TOKEN", nil
	}
	path := filepath.Join(g.home, "token")
	if data, err := readPrivateFile(path, "the API token", 4<<10); err == nil {
		t := strings.TrimSpace(string(data))
		if len(t) < 16 {
			return "", "", fmt.Errorf("%s holds a token shorter than 16 characters: delete it to make a new one", path)
		}
		return t, path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	t := hex.EncodeToString(raw)
	if err := os.MkdirAll(g.home, 0o700); err != nil {
		return "", "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", "", fmt.Errorf("create API token: %w", err)
	}
	if _, err := f.WriteString(t + "\n"); err != nil {
		f.Close()
		return "", "", err
	}
	if err := f.Close(); err != nil {
		return "", "", err
	}
	return t, path, nil
}
