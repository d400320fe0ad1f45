package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/term"
)

// readPassphrase returns $TOOLHOST_PASSPHRASE or prompts on the terminal.
func readPassphrase(prompt string, confirm bool) ([]byte, error) {
	if p, ok := os.LookupEnv("TOOLHOST_PASSPHRASE"); ok {
		if p == "" {
			return nil, errors.New("TOOLHOST_PASSPHRASE is set but empty")
		}
		return []byte(p), nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, errors.New("a passphrase is needed but there is no terminal: set TOOLHOST_PASSPHRASE (or, for keygen, pass --no-passphrase)")
	}
	defer tty.Close()
	fmt.Fprint(tty, prompt)
	p, err := term.ReadPassword(int(tty.Fd()))
	fmt.Fprintln(tty)
	if err != nil {
		return nil, fmt.Errorf("read passphrase: %w", err)
	}
	if len(p) == 0 {
		return nil, errors.New("empty passphrase: type one, or use --no-passphrase for an unencrypted key")
	}
	if confirm {
		fmt.Fprint(tty, "Repeat passphrase: ")
		again, err := term.ReadPassword(int(tty.Fd()))
		fmt.Fprintln(tty)
		if err != nil {
			return nil, fmt.Errorf("read passphrase: %w", err)
		}
		if !bytes.Equal(p, again) {
			return nil, errors.New("the passphrases do not match")
		}
	}
	return p, nil
}
