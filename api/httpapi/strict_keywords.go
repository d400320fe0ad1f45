package httpapi

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Checks of the keywords and limits strict mode keeps, so that a converted
// schema is a valid schema within strict mode's published limits.

func (c *strictConv) countEnum(values []any, at string) error {
	c.enumValues += len(values)
	if c.enumValues > strictMaxEnumValues {
		return unsupported(at, "more than %d enum values in all, strict mode's limit", strictMaxEnumValues)
	}
	size := 0
	for _, v := range values {
		if s, ok := v.(string); ok {
			size += len(s)
		}
	}
	c.stringLength += size
	if len(values) > strictBigEnum && size > strictBigEnumStringSize {
		return unsupported(at, "an enum of more than %d values whose strings add up to more than %d characters, strict mode's limit", strictBigEnum, strictBigEnumStringSize)
	}
	return nil
}

func checkStrictType(t any, at string) error {
	var names []any
	switch t := t.(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		return unsupported(at, "type must be a type name or an array of them")
	}
	if len(names) == 0 {
		return unsupported(at, "type must name at least one type")
	}
	seen := map[string]bool{}
	for _, n := range names {
		name, _ := n.(string)
		if !strictTypes[name] {
			return unsupported(at, "type %v is not supported in strict mode", n)
		}
		if seen[name] {
			return unsupported(at, "type names %q twice", name)
		}
		seen[name] = true
	}
	return nil
}

// checkKeywordValue checks the value of a validation keyword that strict
// mode keeps, so that the converted schema is a valid schema.
func checkKeywordValue(key string, v any, at string) error {
	if key == "pattern" {
		p, ok := v.(string)
		if !ok {
			return unsupported(at, "pattern must be a string")
		}
		if _, err := regexp.Compile(p); err != nil {
			return unsupported(at, "pattern is not a regular expression this host can check: %v", err)
		}
		return nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return unsupported(at, "%s must be a number", key)
	}
	f, err := n.Float64()
	if err != nil {
		return unsupported(at, "%s is out of range", key)
	}
	switch key {
	case "multipleOf":
		if f <= 0 {
			return unsupported(at, "multipleOf must be greater than 0")
		}
	case "minItems", "maxItems":
		if _, err := n.Int64(); err != nil || f < 0 {
			return unsupported(at, "%s must be a non-negative integer", key)
		}
	}
	return nil
}

// isObjectSchema reports whether s describes objects: its type says so, or
// it lists properties.
func isObjectSchema(s *object, props *object) bool {
	if props != nil {
		return true
	}
	switch t, _ := s.get("type"); t := t.(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

// isType reports whether s says "type": name, exactly.
func isType(s *object, name string) bool {
	t, _ := s.get("type")
	return t == name
}

func hasAny(s *object, keys ...string) bool {
	for _, k := range keys {
		if _, ok := s.get(k); ok {
			return true
		}
	}
	return false
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkStrictShape refuses the combinations of kept keywords that strict
// mode would read differently from the host (which reads draft 2020-12),
// so that a converted schema never lets through what the tool refuses nor
// forbids what its author allowed:
//   - an array schema without items: strict mode refuses it outright;
//   - $ref beside validation keywords: strict mode reads a reference alone
//     (as draft 7 did), so the keywords beside it would be lost;
//   - anyOf beside an object schema: closing the object
//     (additionalProperties: false) would forbid the properties its
//     branches add, so no branch's objects could be sent.
func checkStrictShape(out, props *object, at string) error {
	if typeNames(out)["array"] {
		if _, ok := out.get("items"); !ok {
			return unsupported(at, "an array schema without items is not supported in strict mode; say what its elements are with items")
		}
	}
	if _, ok := out.get("$ref"); ok {
		var beside []string
		for _, m := range out.members {
			if m.key != "$ref" && m.key != "title" && m.key != "description" {
				beside = append(beside, m.key)
			}
		}
		if len(beside) > 0 {
			return unsupported(at, "$ref beside %s: strict mode reads a reference alone, so those keywords would be lost; move them into the definition it points to", strings.Join(beside, ", "))
		}
	}
	if _, ok := out.get("anyOf"); ok && isObjectSchema(out, props) {
		return unsupported(at, "anyOf beside an object schema: strict mode closes every object (additionalProperties: false), which would forbid the properties its branches add; describe the object in each branch and leave type, properties and required off the schema that holds anyOf")
	}
	return nil
}

// typeNames is the set of type names s says.
func typeNames(s *object) map[string]bool {
	names := map[string]bool{}
	switch t, _ := s.get("type"); t := t.(type) {
	case string:
		names[t] = true
	case []any:
		for _, n := range t {
			if n, ok := n.(string); ok {
				names[n] = true
			}
		}
	}
	return names
}
