package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	pngpkg "image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/plugin"
)

// fixtureManifest is a plugin over testdata/echo whose tools cover what the
// dialects and strict mode must handle: optional and required properties,
// nested objects, arrays, enums, local references, annotations strict mode
// drops, and schemas strict mode cannot take.
const fixtureManifest = `{
  "name": "fixture", "version": "0.3.0", "description": "Dialect fixture", "wasm": "echo.wasm",
  "tools": [
    {"name": "lookup", "description": "Look records up", "export": "echo",
     "parameters": {"type": "object",
       "properties": {
         "query": {"type": "string", "description": "What to look for"},
         "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
         "unit": {"type": "string", "enum": ["metric", "imperial"]},
         "filter": {"type": "object", "properties": {"tag": {"type": "string"}, "since": {"type": "string", "format": "date"}}, "required": ["tag"]},
         "ids": {"type": "array", "items": {"$ref": "#/$defs/id"}, "maxItems": 20},
         "mode": {"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "integer"}]}
       },
       "required": ["query"],
       "$defs": {"id": {"type": "string", "pattern": "^[a-z0-9]+$"}}}},
    {"name": "no-args", "description": "Takes nothing", "export": "echo", "parameters": {"type": "object", "properties": {}}},
    {"name": "free_form", "description": "Takes any labels", "export": "echo",
     "parameters": {"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}}},
    {"name": "bounded", "description": "Length-bounded text", "export": "echo",
     "parameters": {"type": "object", "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 10}}, "required": ["text"]}},
    {"name": "delete_note", "description": "Delete one note by id", "export": "echo",
     "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
     "output_schema": {"type": "object", "properties": {"id": {"type": "string"}}},
     "annotations": {"title": "Delete a note", "destructive": true, "idempotent": true},
     "needs_approval": true}
  ]
}`

func fixtureBundle(t testing.TB) *plugin.Bundle {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "host", "testdata", "echo", "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := plugin.NewBundle([]byte(fixtureManifest), wasm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleHost is a host with every sample plugin (`make plugins`) and the
// fixture plugin installed.
func sampleHost(t *testing.T) *host.Host {
	t.Helper()
	bundles := []*plugin.Bundle{fixtureBundle(t)}
	for _, name := range []string{"time", "fs", "fetch"} {
		b := readBundle(t, filepath.Join("..", "..", "build", "plugins", name+".plugin"))
		if name == "fs" {
			// The sample grants /srv/toolhost-fs-sample; the host refuses a
			// grant it cannot open, so point it at a directory that exists.
			manifest := bytes.Replace(b.ManifestBytes, []byte(`"/srv/toolhost-fs-sample"`), []byte(strconv.Quote(t.TempDir())), 1)
			var err error
			if b, err = plugin.NewBundle(manifest, b.Wasm); err != nil {
				t.Fatal(err)
			}
		}
		bundles = append(bundles, b)
	}
	return newHostWith(t, host.Options{}, bundles...)
}

var (
	dialectSchemasOnce sync.Once
	dialectSchemas     map[string]*jsonschema.Schema
	dialectSchemasErr  error
)

// dialectSchema is the compiled testdata/dialects/NAME.schema.json.
func dialectSchema(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	dialectSchemasOnce.Do(func() {
		const base = "https://toolhost.test/dialects/"
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		files, err := filepath.Glob(filepath.Join("testdata", "dialects", "*.schema.json"))
		if err != nil || len(files) == 0 {
			dialectSchemasErr = err
			return
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				dialectSchemasErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				dialectSchemasErr = err
				return
			}
			if err := c.AddResource(base+filepath.Base(f), doc); err != nil {
				dialectSchemasErr = err
				return
			}
		}
		dialectSchemas = map[string]*jsonschema.Schema{}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".schema.json")
			if dialectSchemas[name], dialectSchemasErr = c.Compile(base + filepath.Base(f)); dialectSchemasErr != nil {
				return
			}
		}
	})
	if dialectSchemasErr != nil {
		t.Fatalf("dialect schemas: %v", dialectSchemasErr)
	}
	s, ok := dialectSchemas[name]
	if !ok {
		t.Fatalf("no testdata/dialects/%s.schema.json", name)
	}
	return s
}

// validateShape fails the test when data does not match the dialect's
// schema.
func validateShape(t testing.TB, dialect string, data []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not JSON: %v", dialect, err)
	}
	if err := dialectSchema(t, dialect).Validate(v); err != nil {
		t.Errorf("%s output does not match its dialect's shape: %v\n%s", dialect, err, data)
	}
}

// TestDialectsSamples lists the sample and fixture plugins' tools in every
// format, with and without strict mode, and validates each answer against
// its dialect's schema; the tools' own schemas pass through unchanged
// outside strict mode.
func TestDialectsSamples(t *testing.T) {
	h := sampleHost(t)
	_, srv := serve(t, h, Options{})
	want := map[string]json.RawMessage{}
	for _, tool := range h.Tools() {
		want[tool.Name] = tool.Parameters
	}
	if len(want) != 10 {
		t.Fatalf("installed tools = %d, want 10 (5 fixture + 5 sample)", len(want))
	}
	for _, tc := range []struct {
		format, query string
		params        func(body []byte) map[string]json.RawMessage
	}{
		{"openai", "", openAIParams},
		{"openai", "&strict=false", openAIParams},
		{"openai", "&strict=true", openAIParams},
		{"openai-responses", "", responsesParams},
		{"openai-responses", "&strict=true", responsesParams},
		{"anthropic", "", listParams("name", "input_schema")},
		{"aisdk", "", aiSDKParams},
		{"mcp", "", listParams("name", "inputSchema")},
	} {
		t.Run(tc.format+tc.query, func(t *testing.T) {
			r := do(t, srv, "GET", "/v1/tools?format="+tc.format+tc.query, "", "")
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			validateShape(t, tc.format, r.body)
			got := tc.params(r.body)
			if len(got) != len(want) {
				t.Fatalf("listed %d tools, want %d", len(got), len(want))
			}
			strict := strings.Contains(tc.query, "strict=true")
			for name, params := range got {
				if !strict {
					if !jsonEqual(t, params, want[name]) {
						t.Errorf("%s: parameters %s, want the tool's own %s", name, params, want[name])
					}
					continue
				}
				checkStrictListing(t, tc.format, r.body, name, params, want[name])
			}
		})
	}
	t.Run("strict verdicts", func(t *testing.T) { checkStrictVerdicts(t, srv) })
	t.Run("manifest metadata", func(t *testing.T) { checkManifestMetadata(t, srv) })
	t.Run("openapi.json", func(t *testing.T) { checkOpenAPI(t, srv, h) })
}

// checkStrictListing checks one tool of a strict listing: listed strict,
// its parameters are in strict mode's subset; listed not strict, its
// parameters are its own and the report says why.
func checkStrictListing(t *testing.T, format string, body []byte, name string, params, own json.RawMessage) {
	t.Helper()
	var list struct {
		Tools        []json.RawMessage `json:"tools"`
		StrictReport []strictVerdict   `json:"strict_report"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.StrictReport, func(v strictVerdict) bool { return v.Name == name })
	if i < 0 {
		t.Fatalf("%s: not in strict_report", name)
	}
	v := list.StrictReport[i]
	if listedStrict(t, format, body, name) != v.Strict {
		t.Errorf("%s: the tool's strict flag and strict_report disagree", name)
	}
	if !v.Strict {
		if v.Reason == "" || !jsonEqual(t, params, own) {
			t.Errorf("%s: not strict, so it needs a reason and its own schema; got %+v, %s", name, v, params)
		}
		return
	}
	validateShape(t, "openai-strict", params)
	if err := checkAllRequired(params); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

func listedStrict(t *testing.T, format string, body []byte, name string) bool {
	t.Helper()
	var list struct {
		Tools []struct {
			Name     string `json:"name"`
			Strict   *bool  `json:"strict"`
			Function *struct {
				Name   string `json:"name"`
				Strict *bool  `json:"strict"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		n, s := tool.Name, tool.Strict
		if format == "openai" {
			n, s = tool.Function.Name, tool.Function.Strict
		}
		if n == name {
			if s == nil {
				t.Fatalf("%s: strict listing without a strict flag", name)
			}
			return *s
		}
	}
	t.Fatalf("%s: not listed", name)
	return false
}

// checkAllRequired checks the rule of strict mode that JSON Schema cannot
// state: every object schema's required lists all of its properties.
func checkAllRequired(schema json.RawMessage) error {
	tree, err := decodeTree(schema)
	if err != nil {
		return err
	}
	var bad error
	walkSchemas(tree, func(o *object) {
		props, ok := o.get("properties")
		if !ok || bad != nil {
			return
		}
		req, _ := o.get("required")
		list, _ := req.([]any)
		for _, p := range props.(*object).members {
			if !slices.Contains(list, any(p.key)) {
				bad = &strictError{why: "property " + p.key + " is not required"}
			}
		}
		if len(list) != len(props.(*object).members) {
			bad = &strictError{why: "required lists names that are not properties"}
		}
	})
	return bad
}

func openAIParams(body []byte) map[string]json.RawMessage {
	var list struct {
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &list)
	out := map[string]json.RawMessage{}
	for _, tool := range list.Tools {
		out[tool.Function.Name] = tool.Function.Parameters
	}
	return out
}

func responsesParams(body []byte) map[string]json.RawMessage {
	return listParams("name", "parameters")(body)
}

func listParams(nameKey, schemaKey string) func([]byte) map[string]json.RawMessage {
	return func(body []byte) map[string]json.RawMessage {
		var list struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		}
		_ = json.Unmarshal(body, &list)
		out := map[string]json.RawMessage{}
		for _, tool := range list.Tools {
			var name string
			_ = json.Unmarshal(tool[nameKey], &name)
			out[name] = tool[schemaKey]
		}
		return out
	}
}

func aiSDKParams(body []byte) map[string]json.RawMessage {
	var set struct {
		Tools map[string]struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &set)
	out := map[string]json.RawMessage{}
	for name, tool := range set.Tools {
		out[name] = tool.InputSchema
	}
	return out
}

func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %s", a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

// checkStrictVerdicts pins which sample and fixture tools strict mode can
// take, and why the others cannot.
func checkStrictVerdicts(t *testing.T, srv *httptest.Server) {
	r := do(t, srv, "GET", "/v1/tools?format=openai-responses&strict=true", "", "")
	var list struct {
		StrictReport []strictVerdict `json:"strict_report"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]strictVerdict{}
	for _, v := range list.StrictReport {
		got[v.Name] = v
	}
	for name, want := range map[string]string{
		"lookup":           "",
		"no-args":          "",
		"delete_note":      "",
		"free_form":        "at /properties/labels/additionalProperties: the object accepts properties it does not list",
		"bounded":          "at /properties/text/minLength: minLength is not supported in strict mode",
		"get_current_time": "at /properties/timezone/minLength: minLength is not supported",
		"convert_time":     "at /properties/time/minLength",
		"read_file":        "minLength is not supported",
		"list_directory":   "minLength is not supported",
		"fetch_url":        "at /properties/url/minLength",
	} {
		v, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: missing from strict_report", name)
		case want == "" && !v.Strict:
			t.Errorf("%s: not strict: %s", name, v.Reason)
		case want != "" && (v.Strict || !strings.Contains(v.Reason, want)):
			t.Errorf("%s: verdict %+v, want a reason containing %q", name, v, want)
		}
	}
	lookup := got["lookup"]
	if !slices.Equal(sortedCopy(lookup.MadeNullable), sortedCopy([]string{"/properties/limit", "/properties/unit", "/properties/filter", "/properties/ids", "/properties/mode", "/properties/filter/properties/since"})) {
		t.Errorf("lookup made_nullable = %v", lookup.MadeNullable)
	}
	if !slices.Equal(lookup.Dropped, []string{"/properties/limit/default"}) {
		t.Errorf("lookup dropped = %v", lookup.Dropped)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// checkManifestMetadata follows the fixture's delete_note (title,
// annotations, output_schema, needs_approval in its signed manifest) into
// every dialect that can hold them.
func checkManifestMetadata(t *testing.T, srv *httptest.Server) {
	var mcp struct{ Tools []map[string]any }
	_ = json.Unmarshal(do(t, srv, "GET", "/v1/tools?format=mcp", "", "").body, &mcp)
	var del map[string]any
	for _, tool := range mcp.Tools {
		if tool["name"] == "delete_note" {
			del = tool
		}
	}
	ann, _ := del["annotations"].(map[string]any)
	if del["title"] != "Delete a note" || del["outputSchema"] == nil || ann["destructiveHint"] != true || ann["idempotentHint"] != true ||
		ann["readOnlyHint"] != false || ann["openWorldHint"] != false || ann["title"] != "Delete a note" {
		t.Errorf("mcp delete_note = %v", del)
	}
	var set struct{ Tools map[string]map[string]any }
	_ = json.Unmarshal(do(t, srv, "GET", "/v1/tools?format=aisdk", "", "").body, &set)
	if d := set.Tools["delete_note"]; d["needsApproval"] != true || d["title"] != "Delete a note" || d["outputSchema"] == nil {
		t.Errorf("aisdk delete_note = %v", d)
	}
	doc := string(do(t, srv, "GET", "/openapi.json", "", "").body)
	for _, want := range []string{`"delete_note.result":{"type":"object"`, `"x-toolhost-needs-approval":true`, `"summary":"Delete a note"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("openapi.json lacks %s", want)
		}
	}
}

// TestDialectsMetadata renders tools that carry the manifest's optional
// metadata and checks each dialect that can hold a field carries it, in
// that dialect's shape.
func TestDialectsMetadata(t *testing.T) {
	tools := []toolView{
		{
			Name: "delete_note", Description: "Delete one note by id",
			Parameters:   json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"deleted":{"type":"boolean"}}}`),
			Title:        "Delete a note", NeedsApproval: true,
			Annotations: &toolAnnotations{Destructive: true, Idempotent: true},
		},
		{Name: "plain", Description: "No metadata", Parameters: json.RawMessage(`{"type":"object"}`)},
		// Boolean property schemas: MCP types each property as an object.
		{
			Name: "loose", Description: "Any value, and one never",
			Parameters:   json.RawMessage(`{"type":"object","properties":{"any":true,"never":false,"s":{"type":"string"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"x":true}}`),
		},
	}
	for _, d := range dialects {
		body, err := json.Marshal(d.render(tools, false))
		if err != nil {
			t.Fatal(err)
		}
		validateShape(t, d.name, body)
	}

	mcp, _ := json.Marshal(renderMCP(tools, false))
	var m struct{ Tools []map[string]any }
	_ = json.Unmarshal(mcp, &m)
	ann, _ := m.Tools[0]["annotations"].(map[string]any)
	if m.Tools[0]["title"] != "Delete a note" || m.Tools[0]["outputSchema"] == nil || ann == nil ||
		ann["destructiveHint"] != true || ann["idempotentHint"] != true || ann["readOnlyHint"] != false || ann["openWorldHint"] != false {
		t.Errorf("mcp tool with metadata = %v", m.Tools[0])
	}
	if _, ok := m.Tools[1]["annotations"]; ok {
		t.Errorf("mcp tool without annotations claims hints: %v", m.Tools[1])
	}

	ai, _ := json.Marshal(renderAISDK(tools, false))
	var set struct{ Tools map[string]map[string]any }
	_ = json.Unmarshal(ai, &set)
	if dn := set.Tools["delete_note"]; dn["needsApproval"] != true || dn["title"] != "Delete a note" || dn["outputSchema"] == nil {
		t.Errorf("aisdk tool with metadata = %v", dn)
	}
	if p := set.Tools["plain"]; len(p) != 2 {
		t.Errorf("aisdk tool without metadata = %v, want description and inputSchema only", p)
	}
}

func TestDialectsRequestErrors(t *testing.T) {
	_, srv := serve(t, newFake(), Options{})
	for _, tc := range []struct{ query, want string }{
		{"format=xml", "use format=openai, format=openai-responses, format=anthropic, format=aisdk, format=mcp"},
		{"format=OpenAI", "unknown format"},
		{"format=openai&strict=yes", `strict="yes"`},
		{"format=anthropic&strict=true", "format=anthropic has no strict mode; strict=true works with format=openai, format=openai-responses"},
		{"strict=true", "strict=true needs a format"},
	} {
		r := do(t, srv, "GET", "/v1/tools?"+tc.query, "", "")
		var e errorBody
		_ = json.Unmarshal(r.body, &e)
		if r.status != 400 || e.Error.Code != CodeInvalidRequest || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s: %d %s, want 400 invalid_request saying %q", tc.query, r.status, r.body, tc.want)
		}
	}
	// The Responses API reads an absent strict as true: it is always sent.
	r := do(t, srv, "GET", "/v1/tools?format=openai-responses", "", "")
	if got := responsesParams(r.body); len(got) != 3 || !strings.Contains(string(r.body), `"strict":false`) || strings.Contains(string(r.body), "strict_report") {
		t.Errorf("responses listing = %s", r.body)
	}
}

// TestMCPFormatCarriesIcons: format=mcp gives a tool's manifest icon as
// MCP icons, as the MCP server's tools/list does, and no icons key without
// one.
func TestMCPFormatCarriesIcons(t *testing.T) {
	var png bytes.Buffer
	if err := pngpkg.Encode(&png, image.NewRGBA(image.Rect(0, 0, 24, 24))); err != nil {
		t.Fatal(err)
	}
	icon := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png.Bytes())
	out, err := json.Marshal(renderMCP([]toolView{{Name: "clock", Icon: icon}, {Name: "plain"}}, false))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tools []struct {
			Name  string
			Icons []map[string]any `json:"icons"`
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 2 || len(got.Tools[0].Icons) != 1 {
		t.Fatalf("format=mcp: %s", out)
	}
	ic := got.Tools[0].Icons[0]
	if ic["src"] != icon || ic["mimeType"] != "image/png" || fmt.Sprint(ic["sizes"]) != "[24x24]" {
		t.Errorf("clock's icon = %v", ic)
	}
	if got.Tools[1].Icons != nil || bytes.Count(out, []byte(`"icons"`)) != 1 {
		t.Errorf("a tool without an icon got icons: %s", out)
	}
}
