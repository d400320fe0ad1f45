package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text from outside (a bundle's descriptions and paths, a tool name in a
// URL, a plugin's error message, an approval's reason) reaches the
// operator's terminal through these. A terminal acts on control
// characters: ESC sequences clear the screen, move the cursor, hide what
// follows; a carriage return or a newline forges a row; bidi overrides and
// zero-width characters make text read as something else. They are shown
// as escapes (\u{1b}), never written.

// terminalSafe returns s for one line of a terminal: every control
// character (newlines and tabs included), format character (bidi, zero
// width) and byte of invalid UTF-8 escaped, everything else as it is.
func terminalSafe(s string) string { return safeText(s, false) }

// terminalSafeLines is terminalSafe that keeps newlines, for text shown as
// lines of its own (a manifest).
func terminalSafeLines(s string) string { return safeText(s, true) }

func safeText(s string, keepNewlines bool) string {
	if plainASCII(s, keepNewlines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x{%02x}", s[i])
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
		case unsafeRune(r):
			fmt.Fprintf(&b, "\\u{%x}", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// plainASCII reports whether s is printable ASCII (and newlines, when
// kept): the common case, returned as it is.
func plainASCII(s string, keepNewlines bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && !(c == '\n' && keepNewlines)) || c > '~' {
			return false
		}
	}
	return true
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// visible returns s for a reviewer, as terminalSafe does, each further
// line indented under the first (a description cannot forge the lines
// that follow it); and, when s holds anything outside printable ASCII,
// the same text with all of that escaped: a reviewer sees what a terminal
// would render as nothing or as a look-alike.
func visible(s string) string {
	shown := strings.ReplaceAll(terminalSafeLines(s), "\n", "\n          ")
	if !hasNonASCII(s) {
		return shown
	}
	return shown + "   [escaped: " + terminalSafe(escapeNonASCII(s)) + "]"
}
