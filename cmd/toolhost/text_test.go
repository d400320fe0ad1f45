package main

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Nothing a terminal acts on survives terminalSafe, and plain text is
// left as it is.
func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"delete_note":                 "delete_note",
		"café 日本":                     "café 日本",
		"\x1b[2J\x1b[31mFAKE\r\nline": `\u{1b}[2J\u{1b}[31mFAKE\u{d}\u{a}line`,
		"a\tb\x7f\u009b":              `a\u{9}b\u{7f}\u{9b}`,
		"abc\u202edef\u200b\u2028":    `abc\u{202e}def\u{200b}\u{2028}`,
		"bad\xff\xc3":                 `bad\x{ff}\x{c3}`,
		"":                            "",
	} {
		if got := terminalSafe(in); got != want {
			t.Errorf("terminalSafe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := terminalSafeLines("a\nb\x1b"); got != "a\nb\\u{1b}" {
		t.Errorf("terminalSafeLines kept %q", got)
	}
	if got := visible("ok\nmodule:   acceptable\x1b[8m"); strings.Contains(got, "\nmodule:") || strings.ContainsRune(got, 0x1b) {
		t.Errorf("visible let a description forge a line or hide text: %q", got)
	}
}

// FuzzTerminalSafe: whatever the input, the output is valid UTF-8 with no
// control or format character.
func FuzzTerminalSafe(f *testing.F) {
	f.Add("\x1b[2Jhello\r\n\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{terminalSafe(s), visible(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%q: not valid UTF-8: %q", s, out)
			}
			for _, r := range out {
				if (unicode.IsControl(r) && r != '\n') || unicode.Is(unicode.Cf, r) {
					t.Fatalf("%q: %q keeps %U", s, out, r)
				}
			}
		}
		if strings.ContainsRune(terminalSafe(s), '\n') {
			t.Fatalf("terminalSafe(%q) keeps a newline", s)
		}
	})
}
