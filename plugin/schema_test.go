package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const testSchema = `{
  "type": "object",
  "properties": {
    "timezone": {"type": "string", "minLength": 1},
    "count": {"type": "integer", "minimum": 1},
    "mode": {"enum": ["fast", "slow"]},
    "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]},
    "list": {"type": "array", "items": {"type": "string"}},
    "a/b": {"type": "string"},
    "t~x": {"type": "string"}
  },
  "required": ["timezone"],
  "additionalProperties": false
}`

// decodeArgs decodes arguments the way the host does (numbers kept exact).
func decodeArgs(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSchemaValidate(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args       string
		wantField  string // "" with wantReason "" means valid
		wantReason string
	}{
		{`{"timezone":"UTC"}`, "", ""},
		{`{"timezone":"UTC","count":3,"mode":"fast","opts":{"deep":true},"list":["a"],"a/b":"x","t~x":"y"}`, "", ""},
		{`{}`, "/timezone", "missing"},
		{`{"count":2}`, "/timezone", "missing"},
		{`{"timezone":5}`, "/timezone", "string"},
		{`{"timezone":null}`, "/timezone", "string"},
		{`{"timezone":""}`, "/timezone", "minLength"},
		{`{"timezone":"x","count":0}`, "/count", "minimum"},
		{`{"timezone":"x","count":1.5}`, "/count", "integer"},
		{`{"timezone":"x","count":"1"}`, "/count", "integer"},
		{`{"timezone":"x","mode":"medium"}`, "/mode", "fast"},
		{`{"timezone":"x","opts":{}}`, "/opts/deep", "missing"},
		{`{"timezone":"x","opts":{"deep":"yes"}}`, "/opts/deep", "boolean"},
		{`{"timezone":"x","list":["a",2]}`, "/list/1", "string"},
		{`{"timezone":"x","a/b":1}`, "/a~1b", "string"},
		{`{"timezone":"x","t~x":1}`, "/t~0x", "string"},
		{`{"timezone":"x","extra":1}`, "", "extra"},
		{`[]`, "", "object"},
		{`"x"`, "", "object"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			err := s.Validate(decodeArgs(t, tt.args))
			if tt.wantField == "" && tt.wantReason == "" {
				if err != nil {
					t.Fatalf("refused valid arguments: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v (%T), want a *ValidationError", err, err)
			}
			if ve.Field != tt.wantField {
				t.Errorf("Field = %q, want %q (%v)", ve.Field, tt.wantField, err)
			}
			if !strings.Contains(ve.Reason, tt.wantReason) {
				t.Errorf("Reason = %q, want it to mention %q", ve.Reason, tt.wantReason)
			}
			if tt.wantField != "" && !strings.Contains(err.Error(), `"`+tt.wantField+`"`) {
				t.Errorf("message %q does not name the field", err)
			}
		})
	}
}

func TestCompileSchema(t *testing.T) {
	for _, ok := range []string{
		`{"type":"object"}`,
		`{"type":"object","properties":{}}`,
		`{"type":"object","$schema":"https://json-schema.org/draft/2020-12/schema"}`,
		`{"type":"object","$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`,
		`{"type":"object","properties":{"self":{"$ref":"#"}}}`,
		`{"type":"object","properties":{"id":{"type":"string"}}}`,
		// Properties may be named like keywords: only values are schemas.
		`{"type":"object","properties":{"$ref":{"type":"string"},"$id":{"type":"string"}},"required":["$ref"]}`,
		`{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]+$","format":"date-time"}}}`,
		// A draft-04 "id" re-bases nothing here: a fragment reference stays
		// in the document, and the loader refuses anything else.
		`{"type":"object","$schema":"http://json-schema.org/draft-04/schema#","id":"https://evil.example/","definitions":{"x":{}},"properties":{"a":{"$ref":"#/definitions/x"}}}`,
	} {
		if _, err := CompileSchema(json.RawMessage(ok)); err != nil {
			t.Errorf("CompileSchema(%s): %v", ok, err)
		}
	}
	for _, tt := range []struct{ schema, want string }{
		{``, "missing"},
		{`not json`, "not JSON"},
		{`{"type":"object"} {}`, "not JSON"},
		{`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "only references inside the schema"},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/x","$id":"https://e.example/"}}}`, "$id is not allowed"},
		{`{"type":"object","$schema":"https://evil.example/meta"}`, "refused"},
		{`{"type":"object","pattern":"("}`, "not a valid schema"},
		{`{"type":"object","description":"\u202e"}`, "U+202E"},
	} {
		_, err := CompileSchema(json.RawMessage(tt.schema))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileSchema(%s) = %v, want an error containing %q", tt.schema, err, tt.want)
		}
	}
}
