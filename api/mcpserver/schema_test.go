package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestObjectSchemaBooleanProperties: every top-level property schema that
// is a boolean becomes an object schema accepting the same values; nothing
// else changes, and a schema without one keeps its exact bytes.
func TestObjectSchemaBooleanProperties(t *testing.T) {
	instances := []string{`{}`, `{"any":1}`, `{"any":null}`, `{"never":"x"}`, `{"s":"x"}`, `{"s":1}`, `{"n":{"deep":1}}`, `{"n":{}}`}
	for _, tc := range []struct{ in, want string }{
		{`{"type":"object","properties":{"any":true,"never":false}}`, `{"type":"object","properties":{"any":{},"never":{"not":{}}}}`},
		{"{ \"properties\" : { \"s\" : {\"type\":\"string\"}, \"any\" : true } ,\n \"type\":\"object\", \"x-kept\": [true, false]}", "{\"properties\":{\"s\":{\"type\":\"string\"},\"any\":{}},\"type\":\"object\",\"x-kept\":[true, false]}"},
		{`{"type":"object","properties":{"n":{"type":"object","properties":{"deep":false}},"never":false},"required":["n"]}`, `{"type":"object","properties":{"n":{"type":"object","properties":{"deep":false}},"never":{"not":{}}},"required":["n"]}`},
		// Unchanged: no boolean property (nested booleans are not MCP's
		// concern), or no properties at all.
		{`{"type":"object", "properties":{"n":{"type":"object","properties":{"deep":false}}}}`, ""},
		{`{"type":"object","additionalProperties":false}`, ""},
		{`{"type":"object"}`, ""},
	} {
		got := ObjectSchema(json.RawMessage(tc.in))
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if string(got) != want {
			t.Errorf("ObjectSchema(%s)\n got %s\nwant %s", tc.in, got, want)
			continue
		}
		var root struct{ Properties map[string]any }
		if err := json.Unmarshal(got, &root); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		for name, p := range root.Properties {
			if _, ok := p.(map[string]any); !ok {
				t.Errorf("%s: property %s is %v, want an object schema", got, name, p)
			}
		}
		own, out := compile(t, tc.in), compile(t, string(got))
		for _, inst := range instances {
			v, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(inst)))
			if (own.Validate(v) == nil) != (out.Validate(v) == nil) {
				t.Errorf("%s: %s is valid under one of %s and %s only", tc.in, inst, tc.in, got)
			}
		}
	}
}

func compile(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestListBooleanPropertySchemas: tools/list sends object property schemas
// for a tool whose signed schemas have boolean ones.
func TestListBooleanPropertySchemas(t *testing.T) {
	loose := tool("loose", `{"type":"object","properties":{"any":true,"never":false}}`)
	loose.OutputSchema = json.RawMessage(`{"type":"object","properties":{"x":true}}`)
	s := New(newFake(loose), "dev")
	defer s.Close()
	list, err := connectIO(t, s, nil).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 {
		t.Fatalf("tools = %v", toolNames(list.Tools))
	}
	for what, schema := range map[string]any{"inputSchema": list.Tools[0].InputSchema, "outputSchema": list.Tools[0].OutputSchema} {
		data, _ := json.Marshal(schema)
		var root struct{ Properties map[string]any }
		if err := json.Unmarshal(data, &root); err != nil || len(root.Properties) == 0 {
			t.Fatalf("%s = %s", what, data)
		}
		for name, p := range root.Properties {
			if _, ok := p.(map[string]any); !ok {
				t.Errorf("%s property %s = %v, want an object schema (%s)", what, name, p, data)
			}
		}
	}
}
