package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

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
	if data, err := os.ReadFile(path); err == nil {
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
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
