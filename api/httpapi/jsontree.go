package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The dialect transforms rewrite tool schemas (strict mode, the OpenAPI
// document's references). They work on a decoded tree that keeps the order
// of object members, so a rewritten schema lists properties in the order
// its author wrote them: OpenAI's strict mode generates arguments in schema
// order, and a reader compares the two side by side.
//
// A tree value is one of nil, bool, json.Number, string, []any or *object.

// object is a JSON object with its members in document order.
type object struct{ members []member }

type member struct {
	key   string
	value any
}

func (o *object) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// set replaces the value of key, or appends the member.
func (o *object) set(key string, v any) {
	for i := range o.members {
		if o.members[i].key == key {
			o.members[i].value = v
			return
		}
	}
	o.members = append(o.members, member{key, v})
}

func (o *object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeTree(&buf, o); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeTree writes v in one pass: encoding/json would re-check and
// compact a nested MarshalJSON's output at every level.
func encodeTree(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case *object:
		buf.WriteByte('{')
		for i, m := range v.members {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeTree(buf, m.key); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := encodeTree(buf, m.value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeTree(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.Write(data)
	}
	return nil
}

// maxTreeDepth bounds nesting while decoding: a tool schema is bounded in
// size by the manifest rules, and this keeps a hostile one from making the
// transforms recurse deeply.
const maxTreeDepth = 128

// decodeTree decodes one JSON value, keeping member order. Duplicate keys
// are refused (which one would count is decoder-dependent) and so is data
// after the value.
func decodeTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxTreeDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxTreeDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("invalid JSON: %v", err)
				}
				key, _ := kt.(string)
				if seen[key] {
					return nil, fmt.Errorf("duplicate key %q", key)
				}
				seen[key] = true
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.members = append(o.members, member{key, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("invalid JSON: %v", err)
			}
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("invalid JSON: %v", err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("invalid JSON: unexpected %v", t)
	default:
		return tok, nil // nil, bool, json.Number or string
	}
}

// pointerToken escapes one JSON Pointer reference token (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolvePointer finds the value a local reference ("#", "#/$defs/x")
// names inside root, or reports false.
func resolvePointer(root any, ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor name: not supported here
	}
	cur := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case *object:
			v, ok := c.get(tok)
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, ok := arrayIndex(tok, len(c))
			if !ok {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func arrayIndex(tok string, n int) (int, bool) {
	if tok == "" || len(tok) > 9 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	i := 0
	for _, r := range tok {
		if r < '0' || r > '9' {
			return 0, false
		}
		i = i*10 + int(r-'0')
	}
	return i, i < n
}

// Schema keywords whose values are schemas, by shape. Everything else
// (enum, const, default, examples, unknown keywords) holds data, so a
// member named "$ref" there is not a reference.
var (
	schemaKeywords = map[string]bool{
		"items": true, "additionalProperties": true, "not": true, "if": true, "then": true,
		"else": true, "contains": true, "propertyNames": true, "unevaluatedItems": true,
		"unevaluatedProperties": true, "contentSchema": true, "additionalItems": true,
	}
	schemaListKeywords = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true, "items": true}
	schemaMapKeywords  = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
	}
)

// walkSchemas calls fn on s and on every subschema below it, parents
// first. fn may change the object it is given.
func walkSchemas(s any, fn func(*object)) {
	o, ok := s.(*object)
	if !ok {
		return // a boolean schema, or not a schema
	}
	fn(o)
	for _, m := range o.members {
		switch v := m.value.(type) {
		case *object:
			if schemaKeywords[m.key] {
				walkSchemas(v, fn)
			} else if schemaMapKeywords[m.key] {
				for _, sub := range v.members {
					walkSchemas(sub.value, fn)
				}
			}
		case []any:
			if schemaListKeywords[m.key] {
				for _, sub := range v {
					walkSchemas(sub, fn)
				}
			}
		}
	}
}
