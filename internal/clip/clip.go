// Package clip shortens text that quotes untrusted input (a key, a path, a
// plugin's message) before people or models read it.
package clip

import "unicode/utf8"

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
