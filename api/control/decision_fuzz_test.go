package control_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/api/control"
)

// FuzzParseDecision: an approval decision is a request body (HTTP API and
// control socket). What ParseDecision accepts is what any JSON reader takes
// the body to say — one object, keys decision and reason only, decision
// approve or deny — and its re-encoding says the same; every refusal says
// what the body must be.
func FuzzParseDecision(f *testing.F) {
	for _, s := range []string{
		`{"decision":"approve"}`, `{"decision":"deny","reason":"not on a Friday"}`, `{"decision":"deny","reason":"\u001b[2J\u202e"}`,
		`{"decision":"deny","decision":"approve"}`, `{"DECISION":"approve"}`, `{"decision":"approve"}{"decision":"deny"}`,
		`{"decision":"Approve"}`, `{"decision":"approve","reason":null}`, `{"decision":"approve","reason":1}`,
		`{"decision":"approve","extra":true}`, ` {"decision":"deny"} `, `[]`, `null`, ``, `{"decision":"deny","reason":"\xff"}`,
		`{"decision":"approve","reason":"` + strings.Repeat("x", 70<<10) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		approve, reason, err := control.ParseDecision(bytes.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), "decision") {
				t.Fatalf("refusal does not say what a decision must be: %v", err)
			}
			return
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(data, &keys); err != nil {
			t.Fatalf("accepted %q, which is not one JSON object: %v", data, err)
		}
		var ref control.DecisionRequest
		if err := json.Unmarshal(data, &ref); err != nil {
			t.Fatal(err)
		}
		if top := topLevelKeys(t, data); len(top) != len(keys) {
			t.Fatalf("accepted %q, whose keys %q repeat", data, top)
		}
		for k := range keys {
			if k != "decision" && k != "reason" {
				t.Fatalf("accepted key %q", k)
			}
		}
		if ref.Decision != "approve" && ref.Decision != "deny" || approve != (ref.Decision == "approve") || reason != ref.Reason {
			t.Fatalf("accepted %q as approve=%v reason=%q; encoding/json reads %+v", data, approve, reason, ref)
		}
		again, _ := json.Marshal(ref)
		a2, r2, err := control.ParseDecision(bytes.NewReader(again))
		if err != nil || a2 != approve || r2 != reason {
			t.Fatalf("re-encoding %s reads back as %v %q, %v", again, a2, r2, err)
		}
	})
}

// topLevelKeys lists the keys of the object data holds, repeats included.
func topLevelKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("accepted %q, which does not start an object", data)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
