package toolerr

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestErrorfBoundsMessages: a message that quotes a long input keeps its
// start and end, says how much was cut, and stays valid UTF-8; a short one
// is left alone.
func TestErrorfBoundsMessages(t *testing.T) {
	if e := Errorf(CodeInvalidArguments, "unknown key %q", "a"); e.Message != `unknown key "a"` {
		t.Errorf("short message changed: %q", e.Message)
	}
	for _, quoted := range []string{strings.Repeat("k", 100_000), strings.Repeat("é", 3_000), strings.Repeat("日本", 2_000)} {
		e := Errorf(CodeInvalidArguments, "unknown key %q; send only the keys the schema names", quoted)
		m := e.Message
		if len(m) > MaxMessageBytes+64 || !utf8.ValidString(m) {
			t.Fatalf("%d bytes, valid UTF-8 %v", len(m), utf8.ValidString(m))
		}
		if !strings.HasPrefix(m, `unknown key "`) || !strings.HasSuffix(m, "; send only the keys the schema names") || !strings.Contains(m, " bytes cut) …") {
			t.Errorf("message %.80q … %q: want the start, the end and the cut named", m, m[len(m)-60:])
		}
	}
	if b := Bound(strings.Repeat("x", MaxMessageBytes)); len(b) != MaxMessageBytes {
		t.Errorf("a message of exactly MaxMessageBytes was cut to %d", len(b))
	}
}
