package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"
)

// readPassphrase returns $TOOLHOST_PASSPHRASE or prompts on the terminal.
func readPassphrase(prompt string, confirm bool) ([]byte, error) {
	if p, ok := os.LookupEnv("TOOLHOST_PASSPHRASE"); ok {
		if p == "" {
			return nil, errors.New("TOOLHOST_PASSPHRASE is set but empty")
		}
		// A terminal prompt ends the passphrase at the line break, so a
		// new key whose passphrase holds one could never be unlocked by
		// typing it (a value read from a file often ends with one).
		if confirm && strings.ContainsAny(p, "\r\n") {
			return nil, errors.New("TOOLHOST_PASSPHRASE holds a line break (\\n or \\r), which a passphrase typed at a prompt can never hold, so the key could not be unlocked by typing it; set it without the line break (a shell's \"$(cat FILE)\" drops a final one)")
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

// passphraseHint explains a wrong passphrase taken from TOOLHOST_PASSPHRASE
// when the variable ends with a line break: it counts as part of the
// passphrase, and a key made at a prompt has none.
func passphraseHint() string {
	if p, ok := os.LookupEnv("TOOLHOST_PASSPHRASE"); ok && strings.ContainsAny(p, "\r\n") {
		return " (TOOLHOST_PASSPHRASE holds a line break, which counts as part of the passphrase: a key whose passphrase was typed at a prompt has none; set the variable without it)"
	}
	return ""
}
