package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/host"
)

// openAPIDoc is the part of the document the tests read.
type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Info    struct {
		Title, Version string
	} `json:"info"`
	Servers  []struct{ URL string } `json:"servers"`
	Security []map[string][]string  `json:"security"`
	Paths    map[string]map[string]struct {
		OperationID string                     `json:"operationId"`
		Summary     string                     `json:"summary"`
		Description string                     `json:"description"`
		Tags        []string                   `json:"tags"`
		Responses   map[string]json.RawMessage `json:"responses"`
	} `json:"paths"`
	Components struct {
		SecuritySchemes map[string]struct{ Type, Scheme string } `json:"securitySchemes"`
		Schemas         map[string]json.RawMessage               `json:"schemas"`
		Responses       map[string]json.RawMessage               `json:"responses"`
	} `json:"components"`
}

// checkOpenAPI reads /openapi.json from a server over h and checks it is an
// OpenAPI 3.1 document with one operation per tool whose schemas hold the
// tools' own, and whose declared responses match what real calls answer.
func checkOpenAPI(t *testing.T, srv *httptest.Server, h *host.Host) {
	if r := do(t, srv, "GET", "/openapi.json", "", "-"); r.status != 401 {
		t.Errorf("without a token: %d, want 401", r.status)
	}
	r := do(t, srv, "GET", "/openapi.json", "", "")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Title == "" || doc.Info.Version == "" || len(doc.Servers) != 1 || doc.Servers[0].URL != srv.URL {
		t.Errorf("document head: %+v", doc)
	}
	if s := doc.Components.SecuritySchemes["bearerAuth"]; s.Type != "http" || s.Scheme != "bearer" || len(doc.Security) != 1 {
		t.Errorf("security: %+v %+v", doc.Components.SecuritySchemes, doc.Security)
	}
	tools := h.Tools()
	if len(doc.Paths) != len(tools) {
		t.Errorf("%d paths for %d tools", len(doc.Paths), len(tools))
	}
	for _, tool := range tools {
		op, ok := doc.Paths["/v1/tools/"+tool.Name+"/call"]["post"]
		if !ok {
			t.Errorf("no POST /v1/tools/%s/call", tool.Name)
			continue
		}
		if op.OperationID != tool.Name || op.Description != tool.Description || len(op.Tags) != 1 || op.Tags[0] != tool.Plugin {
			t.Errorf("%s: operation %+v", tool.Name, op)
		}
		for _, status := range []string{"200", "400", "401", "403", "404", "408", "413", "422", "429", "500", "503", "504"} {
			if _, ok := op.Responses[status]; !ok {
				t.Errorf("%s: no %s response", tool.Name, status)
			}
		}
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const base = "https://toolhost.test/openapi.json"
	if err := c.AddResource(base, mustJSON(t, string(r.body))); err != nil {
		t.Fatal(err)
	}
	compile := func(ptr string) *jsonschema.Schema {
		t.Helper()
		s, err := c.Compile(base + "#" + ptr)
		if err != nil {
			t.Fatalf("compile %s: %v", ptr, err)
		}
		return s
	}
	for _, tool := range tools {
		compile("/components/schemas/" + tool.Name + ".arguments")
	}
	body := func(tool string) *jsonschema.Schema {
		return compile("/paths/~1v1~1tools~1" + tool + "~1call/post/requestBody/content/application~1json/schema")
	}
	response := func(tool, status string) *jsonschema.Schema {
		return compile("/paths/~1v1~1tools~1" + tool + "~1call/post/responses/" + status + "/content/application~1json/schema")
	}
	errorResponse := func(name string) *jsonschema.Schema {
		return compile("/components/responses/" + name + "/content/application~1json/schema")
	}

	// The arguments schema keeps its meaning inside the document: the
	// fixture's reference to its own $defs now resolves below its component.
	lookup := body("lookup")
	for args, valid := range map[string]bool{
		`{"arguments":{"query":"q","ids":["a1","b2"]}}`: true,
		`{"arguments":{"query":"q","ids":["A!"]}}`:      false,
		`{"arguments":{"ids":["a1"]}}`:                  false,
		`{"arguments":{"query":"q"},"extra":1}`:         false,
	} {
		if err := lookup.Validate(mustJSON(t, args)); (err == nil) != valid {
			t.Errorf("lookup request %s: valid=%v, want %v (%v)", args, err == nil, valid, err)
		}
	}

	// Real answers match the responses the document declares. (The 200 is
	// the fixture's: a Go sample's first call can outlast its 2 s limit on
	// a loaded machine under -race.)
	for _, tc := range []struct {
		tool, body, auth, status string
		schema                   func() *jsonschema.Schema
	}{
		{"lookup", `{"arguments":{"query":"q"}}`, "", "200", func() *jsonschema.Schema { return response("lookup", "200") }},
		{"convert_time", `{"arguments":{"time":"yesterday"}}`, "", "400", func() *jsonschema.Schema { return errorResponse("BadRequest") }},
		{"lookup", `{"arguments":{}}`, "-", "401", func() *jsonschema.Schema { return errorResponse("Unauthorized") }},
		{"no_such_tool", `{"arguments":{}}`, "", "404", func() *jsonschema.Schema { return errorResponse("NotFound") }},
	} {
		got := do(t, srv, "POST", "/v1/tools/"+tc.tool+"/call", tc.body, tc.auth)
		if strconv.Itoa(got.status) != tc.status {
			t.Errorf("%s %s: status %d, want %s: %s", tc.tool, tc.body, got.status, tc.status, got.body)
			continue
		}
		if err := tc.schema().Validate(mustJSON(t, string(got.body))); err != nil {
			t.Errorf("%s %s: %s answer does not match the document: %v\n%s", tc.tool, tc.body, tc.status, err, got.body)
		}
	}

	validateWithOpenAPISpecValidator(t, r.body)
}

// validateWithOpenAPISpecValidator runs the openapi-spec-validator Python
// package (shipped on the project's machine image) on the document: it
// checks it against the OpenAPI 3.1 schema and resolves every reference.
func validateWithOpenAPISpecValidator(t *testing.T, doc []byte) {
	t.Helper()
	if err := exec.Command("python3", "-c", "import openapi_spec_validator").Run(); err != nil {
		t.Skipf("python3 with openapi-spec-validator is not installed (pip install openapi-spec-validator): %v", err)
	}
	path := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "-m", "openapi_spec_validator", "--schema", "3.1", path).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("OK")) {
		t.Errorf("openapi-spec-validator: %v\n%s", err, out)
	}
}

// TestOpenAPIDocument checks the document's construction on tools with
// metadata and hostile schemas, without a host.
func TestOpenAPIDocument(t *testing.T) {
	tools := []toolView{
		{
			Name: "delete_note", Description: "Delete one note by id", Plugin: "notes", Version: "1.2.0",
			Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"$ref":"#/$defs/id"},"$ref":{"type":"string"},` +
				`"tree":{"type":"array","items":{"$ref":"#"}}},"required":["id"],"$defs":{"id":{"type":"string"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"deleted":{"type":"boolean"}},"enum":[{"$ref":"#/not/a/ref"}]}`),
			Title:        "Delete a note", NeedsApproval: true,
			Annotations: &toolAnnotations{Destructive: true, Idempotent: true},
		},
		{Name: "plain", Description: "No metadata", Plugin: "other", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
	doc, err := openAPIDocument(tools, "1.0.0", "http://127.0.0.1:7411")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var d openAPIDoc
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		// References move below the component; a property named $ref and a
		// "$ref" inside enum data are not references.
		"delete_note.arguments": `{"type":"object","properties":{"id":{"$ref":"#/components/schemas/delete_note.arguments/$defs/id"},"$ref":{"type":"string"},` +
			`"tree":{"type":"array","items":{"$ref":"#/components/schemas/delete_note.arguments"}}},"required":["id"],"$defs":{"id":{"type":"string"}}}`,
		"delete_note.result": `{"type":"object","properties":{"deleted":{"type":"boolean"}},"enum":[{"$ref":"#/not/a/ref"}]}`,
		"plain.arguments":    `{"type":"object"}`,
	} {
		if got := string(d.Components.Schemas[key]); got != want {
			t.Errorf("%s\n got %s\nwant %s", key, got, want)
		}
	}
	if _, ok := d.Components.Schemas["plain.result"]; ok {
		t.Error("a tool without an output schema got a result component")
	}
	op := d.Paths["/v1/tools/delete_note/call"]["post"]
	if op.Summary != "Delete a note" || !strings.Contains(string(op.Responses["200"]), `"#/components/schemas/delete_note.result"`) {
		t.Errorf("delete_note operation: %+v", op)
	}
	if got := d.Paths["/v1/tools/plain/call"]["post"].Summary; got != "plain" {
		t.Errorf("summary without a title = %q, want the name", got)
	}
	var ext map[string]map[string]map[string]json.RawMessage
	_ = json.Unmarshal(data, &struct {
		Paths *map[string]map[string]map[string]json.RawMessage `json:"paths"`
	}{&ext})
	del, plain := ext["/v1/tools/delete_note/call"]["post"], ext["/v1/tools/plain/call"]["post"]
	if string(del["x-toolhost-annotations"]) != `{"read_only":false,"destructive":true,"idempotent":true,"open_world":false}` ||
		string(del["x-toolhost-needs-approval"]) != "true" {
		t.Errorf("delete_note extensions: %s %s", del["x-toolhost-annotations"], del["x-toolhost-needs-approval"])
	}
	if _, ok := plain["x-toolhost-annotations"]; ok {
		t.Error("a tool without annotations got x-toolhost-annotations")
	}
	if _, ok := plain["x-toolhost-needs-approval"]; ok {
		t.Error("a tool without needs_approval got x-toolhost-needs-approval")
	}
	var tooMany struct {
		Content map[string]struct{ Schema json.RawMessage }
		Headers map[string]json.RawMessage
	}
	_ = json.Unmarshal(d.Components.Responses["TooManyRequests"], &tooMany)
	if _, ok := tooMany.Headers["Retry-After"]; !ok || !strings.Contains(string(tooMany.Content["application/json"].Schema), `"busy"`) {
		t.Errorf("429 response = %s", d.Components.Responses["TooManyRequests"])
	}
	validateWithOpenAPISpecValidator(t, data)
}

func TestOpenAPIRoute(t *testing.T) {
	_, srv := serve(t, newFake(), Options{Version: "9.9.9"})
	r := do(t, srv, "POST", "/openapi.json", "", "")
	if r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /openapi.json: %d Allow=%q", r.status, r.header.Get("Allow"))
	}
	r = do(t, srv, "GET", "/openapi.json", "", "", "Host", "evil.example")
	if r.status != 403 {
		t.Errorf("foreign Host: %d, want 403", r.status)
	}
	r = do(t, srv, "GET", "/openapi.json", "", "")
	var d openAPIDoc
	if err := json.Unmarshal(r.body, &d); err != nil || r.status != 200 || d.Info.Version != "9.9.9" || len(d.Paths) != 3 {
		t.Errorf("GET /openapi.json: %d %s", r.status, r.body)
	}
}

// FuzzOpenAPIDocument: any tool schema either builds a document that
// encodes as JSON, with every rewritten reference below its component, or
// is refused; never a panic.
func FuzzOpenAPIDocument(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object"}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"},"$ref":{"$ref":"#"}},"$defs":{"a":{"items":[{"$ref":"#/x"}]}}}`,
		`{"type":"object","enum":[{"$ref":"#/keep"}],"allOf":[{"$dynamicRef":"#/d"}],"not":{"$ref":"#anchor"}}`,
		`[1,{"$ref":"#"}]`, `"x"`, `{"a":`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := openAPIDocument([]toolView{{Name: "t", Plugin: "p", Parameters: data, OutputSchema: data}}, "1", "http://127.0.0.1:1")
		if err != nil {
			if _, perr := decodeTree(data); perr == nil {
				t.Fatalf("refused a schema that decodes: %v", err)
			}
			return
		}
		out, err := json.Marshal(doc)
		if err != nil || !json.Valid(out) {
			t.Fatalf("document does not encode: %v", err)
		}
		for _, key := range []string{"t.arguments", "t.result"} {
			schema, _ := doc.members[len(doc.members)-1].value.(*object).get("schemas")
			s, _ := schema.(*object).get(key)
			walkSchemas(s, func(o *object) {
				for _, k := range []string{"$ref", "$dynamicRef"} {
					ref, _ := o.get(k)
					if v, ok := ref.(string); ok && strings.HasPrefix(v, "#/") && !strings.HasPrefix(v, "#/components/schemas/"+key) {
						t.Fatalf("%s: reference %q not rewritten below its component", key, v)
					}
				}
			})
		}
	})
}

// BenchmarkOpenAPIDocument builds and encodes the document for 100 tools
// with the fixture's lookup schema, as GET /openapi.json does per request.
func BenchmarkOpenAPIDocument(b *testing.B) {
	var m struct {
		Tools []struct{ Parameters json.RawMessage }
	}
	if err := json.Unmarshal([]byte(fixtureManifest), &m); err != nil {
		b.Fatal(err)
	}
	tools := make([]toolView, 100)
	for i := range tools {
		tools[i] = toolView{Name: "tool" + strconv.Itoa(i), Description: "d", Plugin: "p", Parameters: m.Tools[0].Parameters}
	}
	for b.Loop() {
		doc, err := openAPIDocument(tools, "1", "http://127.0.0.1:7411")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(doc); err != nil {
			b.Fatal(err)
		}
	}
}
