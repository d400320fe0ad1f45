package httpapi

import (
	"fmt"
	"slices"
)

// Strict mode has no optional properties: every property is required, and
// one its author left optional becomes nullable, null standing for absent.

// closeObject makes every property required and sets additionalProperties
// false; widenOptional later makes the optional ones nullable.
func (c *strictConv) closeObject(out, props *object, required []string, at string) error {
	for _, r := range required {
		if _, ok := props.get(r); !ok {
			return unsupported(at+"/required", "%q is required but not among the properties; strict mode needs every required property described", r)
		}
	}
	names := make([]any, 0, len(props.members))
	var optional []string
	for _, p := range props.members {
		names = append(names, p.key)
		if !slices.Contains(required, p.key) {
			optional = append(optional, p.key)
		}
	}
	c.optional[out] = optional
	out.set("required", names)
	out.set("additionalProperties", false)
	return nil
}

// widenOptional makes the optional properties of every object schema in v
// (at pointer at) nullable, parents first.
func (c *strictConv) widenOptional(v any, at string) error {
	o, ok := v.(*object)
	if !ok {
		return nil
	}
	if optional := c.optional[o]; len(optional) > 0 {
		props, _ := o.get("properties")
		for i, p := range props.(*object).members {
			if !slices.Contains(optional, p.key) {
				continue
			}
			here := at + "/properties/" + pointerToken(p.key)
			if c.acceptsNull(p.value, map[*object]bool{}) {
				return unsupported(here, "the property is optional and already accepts null, so in strict mode (where every property is required) absent and null could not be told apart")
			}
			props.(*object).members[i].value = nullable(p.value.(*object))
			c.nullable = append(c.nullable, here)
		}
	}
	for _, m := range o.members {
		here := at + "/" + pointerToken(m.key)
		switch m.key {
		case "properties", "$defs", "definitions":
			for _, sub := range m.value.(*object).members {
				if err := c.widenOptional(sub.value, here+"/"+pointerToken(sub.key)); err != nil {
					return err
				}
			}
		case "items":
			if err := c.widenOptional(m.value, here); err != nil {
				return err
			}
		case "anyOf":
			for i, b := range m.value.([]any) {
				if err := c.widenOptional(b, fmt.Sprintf("%s/%d", here, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// nullable returns s widened to also accept null. Where it wraps s, s
// itself becomes the first branch, so what was recorded about s still
// holds.
func nullable(s *object) *object {
	nullSchema := &object{members: []member{{"type", "null"}}}
	branches, hasAnyOf := s.get("anyOf")
	t, hasType := s.get("type")
	_, hasRef := s.get("$ref")
	_, hasConst := s.get("const")
	if hasRef || hasConst || (!hasType && !hasAnyOf) {
		// Wrap; the annotations move outside, where a model reads them.
		outer := &object{}
		kept := s.members[:0:0]
		for _, m := range s.members {
			if m.key == "title" || m.key == "description" {
				outer.members = append(outer.members, m)
			} else {
				kept = append(kept, m)
			}
		}
		s.members = kept
		outer.set("anyOf", []any{s, nullSchema})
		return outer
	}
	if hasAnyOf {
		s.set("anyOf", append(branches.([]any), nullSchema))
	}
	switch t := t.(type) {
	case string:
		s.set("type", []any{t, "null"})
	case []any:
		s.set("type", append(t, "null"))
	}
	if values, ok := s.get("enum"); ok {
		s.set("enum", append(values.([]any), nil))
	}
	return s
}

// acceptsNull reports whether the schema s lets null through, following
// local references; seen holds the schemas already looked at, so cycles
// and shared definitions are looked at once.
func (c *strictConv) acceptsNull(s any, seen map[*object]bool) bool {
	o, ok := s.(*object)
	if !ok {
		return true // not a schema object: treat as ambiguous
	}
	if seen[o] {
		return false // already answered (or being answered) elsewhere
	}
	seen[o] = true
	if t, ok := o.get("type"); ok {
		switch t := t.(type) {
		case string:
			if t == "null" {
				return true
			}
		case []any:
			if slices.Contains(t, any("null")) {
				return true
			}
		}
	}
	if v, ok := o.get("const"); ok && v == nil {
		return true
	}
	if values, ok := o.get("enum"); ok && slices.Contains(values.([]any), nil) {
		return true
	}
	if branches, ok := o.get("anyOf"); ok {
		for _, b := range branches.([]any) {
			if c.acceptsNull(b, seen) {
				return true
			}
		}
	}
	if ref, ok := o.get("$ref"); ok {
		target, _ := resolvePointer(c.root, ref.(string))
		return c.acceptsNull(target, seen)
	}
	return false
}
