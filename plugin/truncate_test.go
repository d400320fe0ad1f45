package plugin

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Quoted input is cut between characters whatever their width, so an error
// never shows half a character.
func TestTruncateCutsBetweenCharacters(t *testing.T) {
	for _, r := range []string{"a", "é", "€", "𝄞"} {
		for n := 70; n < 100; n++ {
			s := strings.Repeat("x", n%4) + strings.Repeat(r, n)
			got := truncate(s)
			if !utf8.ValidString(got) {
				t.Fatalf("truncate(%d × %q) = %q: not valid UTF-8", n, r, got)
			}
			if len(s) <= 80 && got != s {
				t.Fatalf("truncate changed a short string: %q → %q", s, got)
			}
			if len(s) > 80 && (!strings.HasSuffix(got, "…") || len(got) > 80+len("…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…"))) {
				t.Fatalf("truncate(%d × %q) = %q: want a prefix of at most 80 bytes and …", n, r, got)
			}
		}
	}
}
