// Package clip shortens text that quotes untrusted input (a key, a path, a
// plugin's message) before people or models read it.
package clip

import (
	"strings"
	"unicode/utf8"
)

// Middle returns the start of s (at most head bytes) and its end (at most
// tail bytes), each cut between UTF-8 characters, and whether anything lay
// between them. When s is no longer than head+tail it returns s and "".
func Middle(s string, head, tail int) (start, end string, cut bool) {
	if len(s) <= head+tail {
		return s, "", false
	}
	i, j := head, len(s)-tail
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	for j < len(s) && !utf8.RuneStart(s[j]) {
		j++
	}
	return s[:i], s[j:], true
}

// Printable makes text a plugin controls safe to show in logs, terminals
// and answers a model reads: invalid UTF-8, control characters other than
// newline and tab (terminal escapes) and bidirectional overrides and
// isolates become U+FFFD.
func Printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0),
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return '\uFFFD'
		}
		return r
	}, s)
}
