package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
)

// A plugin whose schemas have boolean property schemas (legal JSON Schema,
// accepted by the manifest) must not hide the tools from the official
// TypeScript SDK v1, which refuses a tools/list result in which a property
// schema is not an object; it lists them, and the schemas still mean what
// was signed (a value for "any" passes, any value for "never" is refused).
func TestMCPBooleanPropertySchemasListed(t *testing.T) {
	w := newWorld(t)
	root, err := testplugins.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join(root, "host", "testdata", "echo", "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := []byte(`{"name": "loose", "version": "1.0.0", "description": "Boolean property schemas", "wasm": "echo.wasm",
 "tools": [
  {"name": "loose", "description": "Any value, and one never", "export": "echo",
   "parameters": {"type": "object", "properties": {"any": true, "never": false}},
   "output_schema": {"type": "object", "properties": {"any": true}}},
  {"name": "plain", "description": "Returns its arguments", "export": "echo", "parameters": {"type": "object"}}]}`)
	b, err := plugin.NewBundle(manifest, wasm)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(w.dir, "loose.plugin")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	w.run("curator", "sign", "--key", filepath.Join(w.dir, "alice.key"), path)
	w.run("plugin", "install", path)

	c := startMCPClient(t, w, "stdio", "--", w.bin, "mcp")
	list := c.step(`{"op":"list"}`)
	if names := toolNamesOf(list); len(names) != 2 {
		t.Fatalf("the SDK client listed %v (%v); stderr: %s", names, list, c.stderr())
	}
	for _, tl := range list["tools"].([]any) {
		m := tl.(map[string]any)
		for _, key := range []string{"inputSchema", "outputSchema"} {
			s, _ := m[key].(map[string]any)
			props, _ := s["properties"].(map[string]any)
			for name, p := range props {
				if _, ok := p.(map[string]any); !ok {
					t.Errorf("%s %s property %s = %v, want an object schema", m["name"], key, name, p)
				}
			}
		}
	}
	if res := c.step(`{"op":"call","tool":"loose","arguments":{"any":[1,{"x":null}]}}`); res["isError"] != false {
		t.Errorf("a value for the property that takes any: %v", res)
	}
	res := c.step(`{"op":"call","tool":"loose","arguments":{"never":1}}`)
	data, _ := json.Marshal(res)
	if res["isError"] != true || !strings.Contains(contentText(res), "/never") {
		t.Errorf("a value for the property that takes none: %s", data)
	}
}
