package plugin

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestUnsatisfiableRequired(t *testing.T) {
	cases := []struct {
		name, schema string
		want         []string
	}{
		{"fine", `{"type":"object","properties":{"a":{}},"required":["a"],"additionalProperties":false}`, nil},
		{"open object", `{"type":"object","properties":{},"required":["a"]}`, nil},
		{"additionalProperties true", `{"type":"object","required":["a"],"additionalProperties":true}`, nil},
		{"top level", `{"type":"object","properties":{"a":{}},"required":["a","b"],"additionalProperties":false}`,
			[]string{`the arguments: "b" is required, but properties does not define it and additionalProperties is false`}},
		{"no properties at all", `{"type":"object","required":["x"],"additionalProperties":false}`,
			[]string{`the arguments: "x" is required, but properties does not define it and additionalProperties is false`}},
		{"nested and in items", `{"type":"object","properties":{"f":{"type":"object","required":["q"],"additionalProperties":false},"l":{"type":"array","items":{"type":"object","properties":{},"required":["z"],"additionalProperties":false}}}}`,
			[]string{
				`/properties/f: "q" is required, but properties does not define it and additionalProperties is false`,
				`/properties/l/items: "z" is required, but properties does not define it and additionalProperties is false`,
			}},
		{"not JSON", `{`, nil},
		{"required not strings", `{"required":[1,null],"additionalProperties":false}`, nil},
	}
	for _, c := range cases {
		if got := UnsatisfiableRequired(json.RawMessage(c.schema)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// Combinators at the top level of the parameters are named (Anthropic's
// API refuses them there); nested ones, and schemas that do not parse, are
// not findings.
func TestRootCombinators(t *testing.T) {
	for _, c := range []struct {
		schema string
		want   []string
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, nil},
		{`{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`, []string{"anyOf"}},
		{`{"oneOf":[{"type":"object"}],"allOf":[{"type":"object"}]}`, []string{"oneOf", "allOf"}},
		{`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, nil},
		{`not json`, nil},
		{`true`, nil},
	} {
		if got := RootCombinators(json.RawMessage(c.schema)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("RootCombinators(%s) = %q, want %q", c.schema, got, c.want)
		}
	}
}
