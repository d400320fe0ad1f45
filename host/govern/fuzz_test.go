package govern

import (
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// FuzzParseAnswer: a hook's answer is untrusted bytes. The parser never
// panics, and what it accepts is one of the allowed answers: a deny with a
// reason, or a rewrite to a JSON object, or a JSON result.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`{"action":"allow"}`, `{"action":"deny","reason":"no"}`, `{"action":"rewrite","arguments":{"a":1}}`,
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
			return
		}
		switch {
		case hv.deny != "":
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
