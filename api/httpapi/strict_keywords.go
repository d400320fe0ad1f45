package httpapi

import (
	"encoding/json"
	"regexp"
	"slices"
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
