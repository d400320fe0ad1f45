package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// OpenAI's strict mode (Structured Outputs) constrains the model's
// arguments to a schema, but only to a subset of JSON Schema: every object
// lists its properties, all of them required, with additionalProperties
// false; an optional property is expressed as a required one that may be
// null; and only the keywords below are accepted. strictSchema converts a
// tool's parameters into that subset when it can do so without changing
// what the schema means, and otherwise says why not. It never drops a
// validation keyword: a schema that strict mode would enforce differently
// from the host is reported, not converted.
//
// What the conversion does change, and reports:
//   - objects get additionalProperties: false where the author left it
//     unset (the model sends no properties the author did not describe);
//   - every property becomes required, and each one that was optional
//     becomes nullable (MadeNullable lists where): a model that means
//     "absent" sends null, and a client drops those nulls before calling;
//   - annotation keywords strict mode refuses (default, examples, $comment,
//     deprecated, readOnly, writeOnly) are dropped (Dropped lists where);
//     they do not change which arguments are valid.

// strictFormats are the string formats strict mode supports.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// strictRef matches the references a converted schema may keep: the
// conversion moves properties (into anyOf, to make them nullable), so a
// reference into a property could end up pointing elsewhere.
var strictRef = regexp.MustCompile(`^#(/(\$defs|definitions)/[^/]+)?$`)

// strictTypes are the JSON types strict mode supports.
var strictTypes = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true, "object": true, "array": true, "null": true,
}

// droppableAnnotations never affect validation, and strict mode refuses
// them.
var droppableAnnotations = map[string]bool{
	"default": true, "examples": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// Strict mode's published size limits.
const (
	strictMaxDepth          = 10
	strictMaxProperties     = 5000
	strictMaxEnumValues     = 1000
	strictMaxStringLength   = 120000
	strictBigEnum           = 250
	strictBigEnumStringSize = 15000
)

// strictResult is a schema converted to the strict subset.
type strictResult struct {
	Schema json.RawMessage
	// MadeNullable are JSON Pointers (into Schema) of the properties that
	// were optional and now accept null instead.
	MadeNullable []string
	// Dropped are JSON Pointers of the annotation keywords removed.
	Dropped []string
}

// strictError says where and why a schema cannot be made strict.
type strictError struct {
	at, why string
}

func (e *strictError) Error() string {
	if e.at == "" {
		return e.why
	}
	return "at " + e.at + ": " + e.why
}

// strictSchema converts a tool's parameters (a JSON Schema with root type
// object) to OpenAI's strict subset, or returns a *strictError that says
// why it cannot.
func strictSchema(raw json.RawMessage) (strictResult, error) {
	root, err := decodeTree(raw)
	if err != nil {
		return strictResult{}, &strictError{why: "the schema is not valid JSON: " + err.Error()}
	}
	if o, ok := root.(*object); !ok || !isType(o, "object") {
		return strictResult{}, &strictError{why: `the root must be an object schema ("type": "object"): strict mode takes a function's parameters as one object`}
	}
	c := &strictConv{root: root, optional: map[*object][]string{}}
	out, err := c.schema(root, "", 1, true)
	if err != nil {
		return strictResult{}, err
	}
	// Second pass, parents before children, so that each pointer in
	// MadeNullable is where the property ends up.
	if err := c.widenOptional(out, ""); err != nil {
		return strictResult{}, err
	}
	data, err := json.Marshal(out)
	if err != nil {
		return strictResult{}, &strictError{why: "cannot encode the converted schema: " + err.Error()}
	}
	return strictResult{Schema: data, MadeNullable: c.nullable, Dropped: c.dropped}, nil
}

type strictConv struct {
	root any
	// optional holds, per converted object schema, the properties its
	// author left optional.
	optional          map[*object][]string
	nullable, dropped []string
	properties        int
	enumValues        int
	stringLength      int
}

func unsupported(at, format string, args ...any) error {
	return &strictError{at: at, why: fmt.Sprintf(format, args...)}
}

// schema converts the schema v found at pointer at. depth counts object and
// array nesting from the root (1).
func (c *strictConv) schema(v any, at string, depth int, root bool) (any, error) {
	s, ok := v.(*object)
	if !ok {
		return nil, unsupported(at, "a boolean schema (true or false) is not supported in strict mode; describe the value with a type")
	}
	if depth > strictMaxDepth {
		return nil, unsupported(at, "nested more than %d levels deep, strict mode's limit", strictMaxDepth)
	}
	out := &object{}
	var props *object
	var required []string
	hasRequired, closed := false, false
	for _, m := range s.members {
		here := at + "/" + pointerToken(m.key)
		switch m.key {
		case "type":
			if err := checkStrictType(m.value, here); err != nil {
				return nil, err
			}
			out.set(m.key, m.value)
		case "title", "description":
			if _, ok := m.value.(string); !ok {
				return nil, unsupported(here, "%s must be a string", m.key)
			}
			out.set(m.key, m.value)
		case "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems":
			if err := checkKeywordValue(m.key, m.value, here); err != nil {
				return nil, err
			}
			out.set(m.key, m.value)
		case "format":
			f, _ := m.value.(string)
			if !strictFormats[f] {
				return nil, unsupported(here, "format %q is not supported in strict mode (it supports %s)", f, strings.Join(slices.Sorted(maps.Keys(strictFormats)), ", "))
			}
			out.set(m.key, m.value)
		case "enum":
			values, ok := m.value.([]any)
			if !ok {
				return nil, unsupported(here, "enum must be an array")
			}
			if err := c.countEnum(values, here); err != nil {
				return nil, err
			}
			out.set(m.key, m.value)
		case "const":
			if str, ok := m.value.(string); ok {
				c.stringLength += len(str)
			}
			out.set(m.key, m.value)
		case "$ref":
			ref, _ := m.value.(string)
			if !strictRef.MatchString(ref) {
				return nil, unsupported(here, "$ref %q: strict mode is given references to the root (#) or to a definition (#/$defs/NAME) only", truncateText(ref, 80))
			}
			if _, ok := resolvePointer(c.root, ref); !ok {
				return nil, unsupported(here, "$ref %q does not point inside this schema", truncateText(ref, 80))
			}
			out.set(m.key, m.value)
		case "$defs", "definitions":
			defs, ok := m.value.(*object)
			if !ok {
				return nil, unsupported(here, "%s must be an object", m.key)
			}
			conv := &object{}
			for _, d := range defs.members {
				sub, err := c.schema(d.value, here+"/"+pointerToken(d.key), 1, false)
				if err != nil {
					return nil, err
				}
				conv.members = append(conv.members, member{d.key, sub})
			}
			out.set(m.key, conv)
		case "anyOf":
			if root {
				return nil, unsupported(here, "anyOf at the root is not supported in strict mode")
			}
			branches, ok := m.value.([]any)
			if !ok || len(branches) == 0 {
				return nil, unsupported(here, "anyOf must be a non-empty array")
			}
			conv := make([]any, len(branches))
			for i, b := range branches {
				sub, err := c.schema(b, fmt.Sprintf("%s/%d", here, i), depth, false)
				if err != nil {
					return nil, err
				}
				conv[i] = sub
			}
			out.set(m.key, conv)
		case "items":
			sub, err := c.schema(m.value, here, depth+1, false)
			if err != nil {
				return nil, err
			}
			out.set(m.key, sub)
		case "properties":
			p, ok := m.value.(*object)
			if !ok {
				return nil, unsupported(here, "properties must be an object")
			}
			props = &object{}
			for _, pm := range p.members {
				c.properties++
				c.stringLength += len(pm.key)
				sub, err := c.schema(pm.value, here+"/"+pointerToken(pm.key), depth+1, false)
				if err != nil {
					return nil, err
				}
				props.members = append(props.members, member{pm.key, sub})
			}
			out.set(m.key, props)
		case "required":
			list, ok := m.value.([]any)
			if !ok {
				return nil, unsupported(here, "required must be an array of property names")
			}
			hasRequired = true
			for _, r := range list {
				name, ok := r.(string)
				if !ok {
					return nil, unsupported(here, "required must be an array of property names")
				}
				required = append(required, name)
			}
		case "additionalProperties":
			if b, ok := m.value.(bool); !ok || b {
				return nil, unsupported(here, "the object accepts properties it does not list; strict mode needs every property listed (additionalProperties: false)")
			}
			closed = true
		default:
			if droppableAnnotations[m.key] {
				c.dropped = append(c.dropped, here)
				continue
			}
			return nil, unsupported(here, "%s is not supported in strict mode", m.key)
		}
	}
	if c.properties > strictMaxProperties {
		return nil, unsupported("", "more than %d properties in all, strict mode's limit", strictMaxProperties)
	}
	if c.stringLength > strictMaxStringLength {
		return nil, unsupported("", "property names, enum and const values add up to more than %d characters, strict mode's limit", strictMaxStringLength)
	}
	if !hasAny(out, "type", "anyOf", "$ref", "enum", "const") {
		return nil, unsupported(at, "the schema does not say what type the value has; strict mode needs a type")
	}
	if err := checkStrictShape(out, props, at); err != nil {
		return nil, err
	}
	if !isObjectSchema(out, props) {
		if hasRequired || closed {
			return nil, unsupported(at, "required or additionalProperties on a schema that is not an object")
		}
		return out, nil
	}
	if props == nil {
		props = &object{}
		out.set("properties", props)
	}
	return out, c.closeObject(out, props, required, at)
}
