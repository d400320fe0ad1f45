package plugin

import (
	"encoding/json"
	"fmt"
	"slices"
)

// UnsatisfiableRequired finds the object schemas in a tool's parameters
// that no arguments can satisfy for the plainest of reasons: a name in
// `required` that `properties` does not define while `additionalProperties`
// is false, so the name is both demanded and forbidden. Every call of such
// a tool fails validation; it is a mistake to show a reviewer, not a
// reason to refuse the manifest (the schema is valid JSON Schema). Each
// finding names where it is ("/properties/filter" for a nested object) and
// the property. It reads the schema as plain JSON and never fails: what
// does not parse is CompileSchema's to report.
func UnsatisfiableRequired(params json.RawMessage) []string {
	var root any
	if json.Unmarshal(params, &root) != nil {
		return nil
	}
	var out []string
	var walk func(node any, at string, depth int)
	walk = func(node any, at string, depth int) {
		obj, ok := node.(map[string]any)
		if !ok || depth > 32 {
			return
		}
		props, _ := obj["properties"].(map[string]any)
		if ap, ok := obj["additionalProperties"].(bool); ok && !ap {
			required, _ := obj["required"].([]any)
			for _, r := range required {
				name, ok := r.(string)
				if _, defined := props[name]; ok && !defined {
					where := at
					if where == "" {
						where = "the arguments"
					}
					out = append(out, fmt.Sprintf("%s: %q is required, but properties does not define it and additionalProperties is false", where, name))
				}
			}
		}
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			walk(props[name], at+"/properties/"+name, depth+1)
		}
		if items, ok := obj["items"]; ok {
			walk(items, at+"/items", depth+1)
		}
	}
	walk(root, "", 0)
	return out
}

// RootCombinators names the schema combinators (anyOf, oneOf, allOf) at
// the top level of a tool's parameters. They are valid JSON Schema and the
// host validates them, but Anthropic's Messages API refuses an
// input_schema that has one at its top level, and refuses the whole
// request with it: `?format=anthropic` passes the signed schema on as it
// is, so such a tool breaks every request of a client that sends it.
// Like UnsatisfiableRequired it is a finding to show an author and a
// reviewer, never a refusal, and it never fails.
func RootCombinators(params json.RawMessage) []string {
	var root map[string]json.RawMessage
	if json.Unmarshal(params, &root) != nil {
		return nil
	}
	var out []string
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if _, ok := root[k]; ok {
			out = append(out, k)
		}
	}
	return out
}
