package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/toolhost/toolhost/internal/strictjson"
)

// Schema is a compiled tool parameter schema.
type Schema struct {
	s *jsonschema.Schema
	// costs[d] bounds the subschemas evaluated at one argument value of
	// depth d (see analyseCost).
	costs []int64
	// text is the cost analysis kept for CheckTextCost when some subschema
	// reads strings by their length (pattern, minLength, ...); else nil.
	text *costAnalysis
	// textPerByte bounds the text cost of one byte of any string in the
	// arguments (perByteBound): a call whose bytes times it stay within
	// MaxTextCost needs no walk.
	textPerByte int64
}

const schemaURL = "toolhost:///parameters.json"

// CompileSchema compiles a tool's parameters. The root must be an object
// schema ("type": "object"); references may only point inside the document.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(raw) == 0 {
		return nil, errors.New(`missing: use {"type": "object", "properties": {}} for a tool without arguments`)
	}
	if len(raw) > MaxParameterBytes {
		return nil, fmt.Errorf("%d bytes, the limit is %d", len(raw), MaxParameterBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "object" {
		return nil, errors.New(`the root must be a JSON Schema object with "type": "object"`)
	}
	if err := checkRefs(doc); err != nil {
		return nil, err
	}
	if err := checkHidden(doc, "", false); err != nil {
		return nil, err
	}
	if err := checkRawHidden("the schema", raw); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noRemoteLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("not a valid schema: %v", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("not a valid schema: %v", err)
	}
	// After compiling, so that a malformed schema is reported as such.
	costs, a, err := analyseCost(doc)
	if err != nil {
		return nil, err
	}
	sc := &Schema{s: s, costs: costs}
	if a.hasText() {
		sc.text, sc.textPerByte = a, a.perByteBound(costs)
	}
	return sc, nil
}

// checkRefs refuses $ref, $dynamicRef and $schema values that point outside
// this document, and any $id (which could re-base references).
func checkRefs(v any) error {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			switch k {
			case "$ref", "$dynamicRef":
				s, _ := child.(string)
				if !strings.HasPrefix(s, "#") {
					return fmt.Errorf("%s %q: only references inside the schema (starting with #) are allowed", k, truncate(s))
				}
			case "$id":
				if _, isString := child.(string); isString {
					return errors.New("$id is not allowed in tool parameters")
				}
			case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
				// The keys here name properties or definitions (a property
				// may well be called "$ref"); only the values are schemas.
				if named, ok := child.(map[string]any); ok {
					for _, schema := range named {
						if err := checkRefs(schema); err != nil {
							return err
						}
					}
					continue
				}
			}
			if err := checkRefs(child); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range t {
			if err := checkRefs(child); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHidden refuses hidden code points (hiddenRune) in any key or string
// of the schema: property descriptions reach the model just as tool
// descriptions do, and must read the same to a reviewer. A regular
// expression or a constant may need one (to match an emoji presentation
// selector, say): there, as the value of "pattern", "const" or an "enum"
// item, or a key of "patternProperties", it is accepted — it can only have
// come from a \u escape, since CompileSchema refuses literal ones, so the
// reviewer sees it. path is the JSON pointer of v.
func checkHidden(v any, path string, escapedOK bool) error {
	switch t := v.(type) {
	case string:
		if r, off, ok := firstHidden(t); ok && !escapedOK {
			return hiddenError(escapeHidden(pointerOrRoot(path)), t, r, off)
		}
	case map[string]any:
		for k, child := range t {
			p := path + "/" + pointerEscaper.Replace(k)
			if r, off, ok := firstHidden(k); ok && !escapedOK {
				return hiddenError("the key "+escapeHidden(pointerOrRoot(p)), k, r, off)
			}
			childOK := k == "pattern" || k == "const" || k == "enum"
			if k == "patternProperties" {
				if m, ok := child.(map[string]any); ok {
					for pk, pv := range m {
						if err := checkHidden(pv, p+"/"+pk, false); err != nil {
							return err
						}
					}
					continue
				}
			}
			if err := checkHidden(child, p, childOK); err != nil {
				return err
			}
		}
	case []any:
		for i, child := range t {
			if err := checkHidden(child, fmt.Sprintf("%s/%d", path, i), escapedOK); err != nil {
				return err
			}
		}
	}
	return nil
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the schema"
	}
	return p
}

type noRemoteLoader struct{}

func (noRemoteLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %q refused: schemas may not reference remote documents", url)
}

// ValidationError says which argument is wrong and why.
type ValidationError struct {
	Field  string // JSON pointer of the offending value, "" for the root
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "arguments: " + e.Reason
	}
	return fmt.Sprintf("argument %q: %s", strictjson.Shown(e.Field), e.Reason)
}

// Validate checks decoded arguments against the schema.
func (s *Schema) Validate(args any) error {
	err := s.s.Validate(args)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Reason: err.Error()}
	}
	leaf := deepest(ve)
	loc := leaf.InstanceLocation
	if req, ok := leaf.ErrorKind.(*kind.Required); ok && len(req.Missing) > 0 {
		// Name the missing field itself, not the object that lacks it.
		loc = append(append([]string(nil), loc...), req.Missing[0])
	}
	field := ""
	for _, tok := range loc {
		field += "/" + pointerEscaper.Replace(tok)
	}
	return &ValidationError{Field: field, Reason: leaf.ErrorKind.LocalizedString(printer)}
}

var printer = message.NewPrinter(language.English)

// pointerEscaper escapes a JSON pointer reference token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func deepest(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve
}
