package govern

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/plugin"
)

// FuzzParseAnswer: a hook's answer is untrusted bytes. The parser never
// panics, and what it accepts is one of the allowed answers: a deny with a
// reason, or a rewrite to a JSON object, or a JSON result.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"{\"action\":\"deny\",\"reason\":\"\\u001b[2J\\u202e\\r\\nFAKE\"}", "{\"action\":\"nope\",\"x\":\"\\u001b]0;t\\u0007\"}", `{"action":"allow"}`, `{"action":"deny","reason":"no"}`, `{"action":"rewrite","arguments":{"a":1}}`,
		`{"result":[1,2]}`, `{"result":null}`, `{"action":"deny"}`, `{"action":"allow","action":"deny"}`, `{"Action":"allow"}`} {
		f.Add(true, []byte(s))
		f.Add(false, []byte(s))
	}
	f.Fuzz(func(t *testing.T, before bool, data []byte) {
		event := plugin.HookAfterCall
		if before {
			event = plugin.HookBeforeCall
		}
		hv, err := parseAnswer(event, data)
		if err != nil {
			if !printableText(err.Error()) {
				t.Fatalf("the error quotes the answer raw: %q", err)
			}
			return
		}
		switch {
		case hv.deny != "":
			if !printableText(hv.deny) {
				t.Fatalf("a deny reason keeps control, bidi or invalid bytes: %q", hv.deny)
			}
		case hv.arguments != nil:
			var m map[string]any
			if !before || json.Unmarshal(hv.arguments, &m) != nil {
				t.Fatalf("accepted a rewrite that is not an object, or after a call: %s", data)
			}
		case hv.result != nil:
			if before || !json.Valid(hv.result) {
				t.Fatalf("accepted a result before a call, or one that is not JSON: %s", data)
			}
		}
	})
}

// printableText: valid UTF-8 without control characters (but newline and
// tab) or bidirectional overrides, which reach terminals and models.
func printableText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return false
		}
	}
	return true
}
