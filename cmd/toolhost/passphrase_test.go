package main

import (
	"strings"
	"testing"
)

// TestPassphraseWithLineBreak: a TOOLHOST_PASSPHRASE holding a line break
// (as read from a file) is refused for a new key, whose passphrase could
// then never be typed at a prompt; for an existing key it is used as it is
// (keys made so by earlier builds still open), and a wrong passphrase says
// the line break counts.
func TestPassphraseWithLineBreak(t *testing.T) {
	for _, p := range []string{"secret\n", "secret\r\n", "secret\r", "sec\nret", "\n"} {
		t.Setenv("TOOLHOST_PASSPHRASE", p)
		if _, err := readPassphrase("", true); err == nil || !strings.Contains(err.Error(), "line break") {
			t.Errorf("new key, TOOLHOST_PASSPHRASE=%q: %v, want a refusal naming the line break", p, err)
		}
		got, err := readPassphrase("", false)
		if err != nil || string(got) != p {
			t.Errorf("existing key, TOOLHOST_PASSPHRASE=%q: %q, %v; want it unchanged", p, got, err)
		}
		if !strings.Contains(passphraseHint(), "line break") {
			t.Errorf("TOOLHOST_PASSPHRASE=%q: no hint", p)
		}
	}
	for _, p := range []string{"secret", "correct horse battery staple", "pässwörd🔑", " spaced "} {
		t.Setenv("TOOLHOST_PASSPHRASE", p)
		if got, err := readPassphrase("", true); err != nil || string(got) != p {
			t.Errorf("TOOLHOST_PASSPHRASE=%q: %q, %v", p, got, err)
		}
		if h := passphraseHint(); h != "" {
			t.Errorf("TOOLHOST_PASSPHRASE=%q: hint %q", p, h)
		}
	}
}
