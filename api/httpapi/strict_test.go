package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestStrictSchemaConverts(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		nullable       []string
		// valid are argument objects the tool accepts; each must be valid
		// under the strict schema once its absent optional properties are
		// sent as null, and valid again under the tool's own schema once
		// those nulls are dropped.
		valid []string
	}{
		{
			name:  "no properties",
			in:    `{"type":"object"}`,
			want:  `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
			valid: []string{`{}`},
		},
		{
			name:     "optional becomes nullable, order kept",
			in:       `{"type":"object","properties":{"b":{"type":"string","description":"B"},"a":{"type":"integer","minimum":0}},"required":["a"]}`,
			want:     `{"type":"object","properties":{"b":{"type":["string","null"],"description":"B"},"a":{"type":"integer","minimum":0}},"required":["b","a"],"additionalProperties":false}`,
			nullable: []string{"/properties/b"},
			valid:    []string{`{"a":1}`, `{"a":0,"b":"x"}`},
		},
		{
			name:     "enum gains null, const and ref are wrapped",
			in:       `{"type":"object","properties":{"e":{"type":"string","enum":["x","y"]},"c":{"const":"k","description":"K"},"r":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"number","multipleOf":0.5}}}`,
			want:     `{"type":"object","properties":{"e":{"type":["string","null"],"enum":["x","y",null]},"c":{"description":"K","anyOf":[{"const":"k"},{"type":"null"}]},"r":{"anyOf":[{"$ref":"#/$defs/d"},{"type":"null"}]}},"$defs":{"d":{"type":"number","multipleOf":0.5}},"required":["e","c","r"],"additionalProperties":false}`,
			nullable: []string{"/properties/e", "/properties/c", "/properties/r"},
			valid:    []string{`{}`, `{"e":"x","c":"k","r":1.5}`},
		},
		{
			name:     "anyOf gains a null branch; nested objects and array items are closed",
			in:       `{"type":"object","properties":{"u":{"anyOf":[{"type":"string","format":"email"},{"type":"integer"}]},"list":{"type":"array","minItems":1,"items":{"type":"object","properties":{"k":{"type":"boolean"}}}}},"required":["list"],"additionalProperties":false}`,
			want:     `{"type":"object","properties":{"u":{"anyOf":[{"type":"string","format":"email"},{"type":"integer"},{"type":"null"}]},"list":{"type":"array","minItems":1,"items":{"type":"object","properties":{"k":{"type":["boolean","null"]}},"required":["k"],"additionalProperties":false}}},"required":["u","list"],"additionalProperties":false}`,
			nullable: []string{"/properties/u", "/properties/list/items/properties/k"},
			valid:    []string{`{"list":[{}]}`, `{"u":3,"list":[{"k":true},{}]}`},
		},
		{
			name:  "annotations strict mode refuses are dropped",
			in:    `{"type":"object","$comment":"c","properties":{"n":{"type":"integer","default":3,"examples":[1],"deprecated":true}},"required":["n"]}`,
			want:  `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`,
			valid: []string{`{"n":1}`},
		},
		{
			name:     "a reference with its title and description, and object branches without a wrapper",
			in:       `{"type":"object","properties":{"r":{"$ref":"#/$defs/d","title":"R","description":"D"},"u":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"array","items":{"type":"integer"}}]}},"required":["r"],"$defs":{"d":{"type":"string"}}}`,
			want:     `{"type":"object","properties":{"r":{"$ref":"#/$defs/d","title":"R","description":"D"},"u":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"type":"array","items":{"type":"integer"}},{"type":"null"}]}},"$defs":{"d":{"type":"string"}},"required":["r","u"],"additionalProperties":false}`,
			nullable: []string{"/properties/u"},
			valid:    []string{`{"r":"x"}`, `{"r":"x","u":{"a":"y"}}`, `{"r":"x","u":[1,2]}`},
		},
		{
			name:  "a property named like a keyword",
			in:    `{"type":"object","properties":{"$ref":{"type":"string"},"type":{"type":"string"}},"required":["$ref","type"]}`,
			want:  `{"type":"object","properties":{"$ref":{"type":"string"},"type":{"type":"string"}},"required":["$ref","type"],"additionalProperties":false}`,
			valid: []string{`{"$ref":"x","type":"y"}`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := strictSchema(json.RawMessage(tc.in))
			if err != nil {
				t.Fatalf("strictSchema: %v", err)
			}
			if string(res.Schema) != tc.want {
				t.Errorf("schema\n got %s\nwant %s", res.Schema, tc.want)
			}
			if fmt.Sprint(res.MadeNullable) != fmt.Sprint(tc.nullable) && !(len(res.MadeNullable) == 0 && len(tc.nullable) == 0) {
				t.Errorf("made nullable %v, want %v", res.MadeNullable, tc.nullable)
			}
			validateShape(t, "openai-strict", res.Schema)
			if err := checkAllRequired(res.Schema); err != nil {
				t.Error(err)
			}
			own, strict := compileTestSchema(t, tc.in), compileTestSchema(t, string(res.Schema))
			for _, args := range tc.valid {
				if err := own.Validate(mustJSON(t, args)); err != nil {
					t.Fatalf("test case: %s is not valid under the tool's schema: %v", args, err)
				}
				asSent := fillNulls(t, args, res.MadeNullable)
				if err := strict.Validate(mustJSON(t, asSent)); err != nil {
					t.Errorf("%s (sent as %s) is not valid under the strict schema: %v", args, asSent, err)
				}
				back := dropNulls(t, asSent, res.MadeNullable)
				if err := own.Validate(mustJSON(t, back)); err != nil {
					t.Errorf("%s with nulls dropped (%s) is not valid under the tool's schema: %v", asSent, back, err)
				}
			}
		})
	}
}

func TestStrictSchemaRefuses(t *testing.T) {
	deep := `{"type":"string"}`
	for range 10 {
		deep = `{"type":"object","properties":{"x":` + deep + `},"required":["x"]}`
	}
	manyEnum := make([]string, 1001)
	for i := range manyEnum {
		manyEnum[i] = fmt.Sprintf("%q", fmt.Sprint(i))
	}
	for _, tc := range []struct{ name, in, want string }{
		{"string length", `{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`, "at /properties/s/maxLength: maxLength is not supported in strict mode"},
		{"open object", `{"type":"object","additionalProperties":true}`, "at /additionalProperties: the object accepts properties it does not list"},
		{"map of values", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"integer"}}}}`, "at /properties/m/additionalProperties"},
		{"oneOf", `{"type":"object","properties":{"o":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`, "at /properties/o/oneOf: oneOf is not supported"},
		{"allOf", `{"type":"object","allOf":[{"properties":{"a":{"type":"string"}}}]}`, "at /allOf: allOf is not supported"},
		{"not", `{"type":"object","properties":{"n":{"type":"string","not":{"const":"x"}}}}`, "not is not supported"},
		{"if", `{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`, "at /if: if is not supported"},
		{"patternProperties", `{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, "patternProperties is not supported"},
		{"uniqueItems", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"},"uniqueItems":true}}}`, "uniqueItems is not supported"},
		{"format uri", `{"type":"object","properties":{"u":{"type":"string","format":"uri"}}}`, `format "uri" is not supported in strict mode (it supports date, date-time, duration, email, hostname, ipv4, ipv6, time, uuid)`},
		{"boolean schema", `{"type":"object","properties":{"any":true}}`, "at /properties/any: a boolean schema"},
		{"untyped", `{"type":"object","properties":{"v":{"description":"anything"}}}`, "at /properties/v: the schema does not say what type"},
		{"anyOf at the root", `{"type":"object","anyOf":[{"required":["a"]}]}`, "anyOf at the root"},
		{"optional and nullable", `{"type":"object","properties":{"n":{"type":["string","null"]}}}`, "at /properties/n: the property is optional and already accepts null"},
		{"optional ref to nullable", `{"type":"object","properties":{"n":{"$ref":"#/$defs/d"}},"$defs":{"d":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, "already accepts null"},
		{"required but undescribed", `{"type":"object","properties":{},"required":["ghost"]}`, `at /required: "ghost" is required but not among the properties`},
		{"remote ref", `{"type":"object","properties":{"r":{"$ref":"https://example.com/s.json"}},"required":["r"]}`, "strict mode is given references to the root (#) or to a definition (#/$defs/NAME) only"},
		{"ref into a property", `{"type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"#/properties/a"}},"required":["a","b"]}`, "to a definition (#/$defs/NAME) only"},
		{"dangling ref", `{"type":"object","properties":{"b":{"$ref":"#/$defs/nope"}},"required":["b"]}`, "does not point inside this schema"},
		{"too deep", deep, "nested more than 10 levels deep"},
		{"too many enum values", `{"type":"object","properties":{"e":{"type":"string","enum":[` + strings.Join(manyEnum, ",") + `]}},"required":["e"]}`, "more than 1000 enum values"},
		{"not JSON", `{"type":"object",`, "the schema is not valid JSON"},
		{"root not an object", `{"type":"string"}`, "the root must be an object schema"},
		{"root nullable", `{"type":["object","null"]}`, "the root must be an object schema"},
		{"root a reference", `{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}`, "the root must be an object schema"},
		{"duplicate key", `{"type":"object","type":"string"}`, "duplicate key"},
		// Strict mode reads these differently from the host (the OpenAI
		// SDK's toStrictJsonSchema refuses each), wherever they are.
		{"array without items", `{"type":"object","properties":{"l":{"type":"array","maxItems":3}},"required":["l"]}`, "at /properties/l: an array schema without items"},
		{"type list with array, no items", `{"type":"object","properties":{"v":{"type":["string","array"]}},"required":["v"]}`, "at /properties/v: an array schema without items"},
		{"array without items in a definition", `{"type":"object","properties":{"r":{"$ref":"#/$defs/l"}},"required":["r"],"$defs":{"l":{"type":"array"}}}`, "at /$defs/l: an array schema without items"},
		{"ref beside enum", `{"type":"object","properties":{"v":{"$ref":"#/$defs/s","enum":["a","b"]}},"required":["v"],"$defs":{"s":{"type":"string"}}}`, "at /properties/v: $ref beside enum"},
		{"ref beside type in a branch", `{"type":"object","properties":{"v":{"anyOf":[{"type":"integer"},{"type":"object","$ref":"#/$defs/o"}]}},"required":["v"],"$defs":{"o":{"type":"object","properties":{"a":{"type":"string"}}}}}`, "at /properties/v/anyOf/1: $ref beside type"},
		{"ref beside pattern in items", `{"type":"object","properties":{"l":{"type":"array","items":{"$ref":"#/$defs/s","pattern":"^a"}}},"required":["l"],"$defs":{"s":{"type":"string"}}}`, "at /properties/l/items: $ref beside pattern"},
		{"anyOf beside object type", `{"type":"object","properties":{"o":{"type":"object","anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}]}},"required":["o"]}`, "at /properties/o: anyOf beside an object schema"},
		{"anyOf beside properties", `{"type":"object","properties":{"o":{"properties":{"k":{"type":"string"}},"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}}]}},"required":["o"]}`, "at /properties/o: anyOf beside an object schema"},
		{"anyOf beside a nullable object in a definition", `{"type":"object","properties":{"r":{"$ref":"#/$defs/o"}},"required":["r"],"$defs":{"o":{"type":["object","null"],"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"null"}]}}}`, "at /$defs/o: anyOf beside an object schema"},
		{"bad pattern", `{"type":"object","properties":{"p":{"type":"string","pattern":"("}},"required":["p"]}`, "pattern is not a regular expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := strictSchema(json.RawMessage(tc.in))
			var se *strictError
			if !errors.As(err, &se) {
				t.Fatalf("converted to %s, want a refusal saying %q", res.Schema, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("reason %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// FuzzStrictSchema: any input is either converted to a schema that is valid
// JSON Schema and in strict mode's subset, or refused with a reason; never a
// panic.
func FuzzStrictSchema(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object"}`,
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":["integer"],"enum":[1,2]}},"required":["a"]}`,
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/x"},"l":{"type":"array","items":{"$ref":"#"}}},"$defs":{"x":{"type":"object","properties":{"y":{"const":null}}}}}`,
		`{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"$ref":"#/properties/u"}]}}}`,
		`{"type":"object","properties":{"s":{"type":"string","pattern":"^a+$","format":"date"},"n":{"type":"number","multipleOf":0}}}`,
		`{"type":"object","properties":{"$ref":{"type":"string","default":1}},"required":["$ref","$ref"]}`,
		`{"type":"object","properties":{"o":{"type":["object","array"],"items":{"type":"string"},"properties":{}}}}`,
		`[]`, `null`, `{"type":"object","additionalProperties":{}}`, `{"type":"string"}`, `{"enum":[1]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := strictSchema(data)
		if err != nil {
			var se *strictError
			if !errors.As(err, &se) || err.Error() == "" {
				t.Fatalf("refusal without a reason: %#v", err)
			}
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(res.Schema))
		if err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, res.Schema)
		}
		if err := c.AddResource("mem:///strict.json", doc); err != nil {
			t.Fatalf("output: %v\n%s", err, res.Schema)
		}
		if _, err := c.Compile("mem:///strict.json"); err != nil {
			t.Fatalf("output is not a valid JSON Schema: %v\nin:  %s\nout: %s", err, data, res.Schema)
		}
		if err := checkAllRequired(res.Schema); err != nil {
			t.Fatalf("output is not strict: %v\n%s", err, res.Schema)
		}
		validateShape(t, "openai-strict", res.Schema)
	})
}

func compileTestSchema(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem:///s.json", mustJSON(t, schema)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// nullablePaths turns made-nullable schema pointers into argument paths:
// "/properties/a/items/properties/b" → ["a", "*", "b"].
func nullablePaths(pointers []string) [][]string {
	var out [][]string
	for _, p := range pointers {
		var path []string
		toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
		for i := 0; i < len(toks); i++ {
			switch toks[i] {
			case "properties":
				i++
				path = append(path, strings.ReplaceAll(strings.ReplaceAll(toks[i], "~1", "/"), "~0", "~"))
			case "items":
				path = append(path, "*")
			}
		}
		out = append(out, path)
	}
	return out
}

// fillNulls sends absent nullable properties as null, as a strict-mode
// model does; dropNulls undoes it, as a client does before calling.
func fillNulls(t *testing.T, args string, pointers []string) string {
	return rewriteArgs(t, args, pointers, func(o map[string]any, key string) {
		if _, ok := o[key]; !ok {
			o[key] = nil
		}
	})
}

func dropNulls(t *testing.T, args string, pointers []string) string {
	return rewriteArgs(t, args, pointers, func(o map[string]any, key string) {
		if v, ok := o[key]; ok && v == nil {
			delete(o, key)
		}
	})
}

func rewriteArgs(t *testing.T, args string, pointers []string, fn func(map[string]any, string)) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Fatal(err)
	}
	var visit func(v any, path []string)
	visit = func(v any, path []string) {
		switch {
		case len(path) == 1:
			if o, ok := v.(map[string]any); ok {
				fn(o, path[0])
			}
		case path[0] == "*":
			if a, ok := v.([]any); ok {
				for _, e := range a {
					visit(e, path[1:])
				}
			}
		default:
			if o, ok := v.(map[string]any); ok {
				visit(o[path[0]], path[1:])
			}
		}
	}
	for _, p := range nullablePaths(pointers) {
		visit(v, p)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// BenchmarkStrictSchema converts the fixture's lookup schema (six
// properties, nested object, array, $defs), as strict=true does per tool
// and request.
func BenchmarkStrictSchema(b *testing.B) {
	var m struct {
		Tools []struct{ Parameters json.RawMessage }
	}
	if err := json.Unmarshal([]byte(fixtureManifest), &m); err != nil {
		b.Fatal(err)
	}
	params := m.Tools[0].Parameters
	b.SetBytes(int64(len(params)))
	for b.Loop() {
		if _, err := strictSchema(params); err != nil {
			b.Fatal(err)
		}
	}
}
