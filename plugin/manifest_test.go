package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// baseManifest is the manifest of shared/DESIGN.md. Tests change one thing
// at a time, either as a value (edit) or as raw text (replace), so that each
// case fails for exactly one reason.
const baseManifest = `{
  "name": "time",
  "version": "1.0.0",
  "description": "Clock and timezone tools",
  "wasm": "plugin.wasm",
  "tools": [
    {
      "name": "get_current_time",
      "description": "Current date and time in a timezone",
      "export": "get_current_time",
      "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}}
    }
  ],
  "limits": {"memory_pages": 64, "timeout_ms": 2000, "max_output_bytes": 1048576},
  "permissions": {"allowed_hosts": [], "allowed_paths": {}}
}`

// edit decodes baseManifest, lets f change it and encodes it again.
func edit(t testing.TB, f func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(baseManifest), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tool0(m map[string]any) map[string]any { return m["tools"].([]any)[0].(map[string]any) }

// replace substitutes old with new once in baseManifest, failing the test if
// old is not there (so a changed base cannot make a case pass vacuously).
func replace(t testing.TB, old, new string) string {
	t.Helper()
	if !strings.Contains(baseManifest, old) {
		t.Fatalf("test bug: %q not in baseManifest", old)
	}
	return strings.Replace(baseManifest, old, new, 1)
}

func makeTools(n int) []any {
	tools := make([]any, n)
	for i := range tools {
		tools[i] = map[string]any{
			"name": fmt.Sprintf("tool_%d", i), "description": "d",
			"parameters": map[string]any{"type": "object"},
		}
	}
	return tools
}

func TestParseManifestValid(t *testing.T) {
	m, err := ParseManifest([]byte(baseManifest))
	if err != nil {
		t.Fatal(err)
	}
	want := &Manifest{
		Name: "time", Version: "1.0.0", Description: "Clock and timezone tools", Wasm: "plugin.wasm",
		Tools: []Tool{{
			Name: "get_current_time", Description: "Current date and time in a timezone", Export: "get_current_time",
			Parameters: json.RawMessage(`{"type": "object", "properties": {"timezone": {"type": "string"}}}`),
		}},
		Limits:      Limits{MemoryPages: 64, TimeoutMS: 2000, MaxOutputBytes: 1048576},
		Permissions: Permissions{AllowedHosts: []string{}, AllowedPaths: map[string]string{}},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("ParseManifest (-want +got):\n%s", diff)
	}
	if tool, ok := m.Tool("get_current_time"); !ok || tool != &m.Tools[0] {
		t.Error("Tool(get_current_time) not found")
	}
	if _, ok := m.Tool("GET_CURRENT_TIME"); ok {
		t.Error("Tool lookup must be exact")
	}

	tests := []struct {
		name  string
		doc   string
		check func(t *testing.T, m *Manifest)
	}{
		{"minimal", `{"name":"a","version":"0.0.0","wasm":"a.wasm","tools":[{"name":"t","description":"d","parameters":{"type":"object"}}]}`,
			func(t *testing.T, m *Manifest) {
				if m.Tools[0].Export != "t" {
					t.Errorf("export defaults to the tool name, got %q", m.Tools[0].Export)
				}
				want := Limits{DefaultMemoryPages, DefaultTimeoutMS, DefaultOutputBytes}
				if got := m.Limits.Effective(); got != want {
					t.Errorf("Effective() = %+v, want %+v", got, want)
				}
				if m.Permissions.AllowedHosts != nil || m.Permissions.AllowedPaths != nil {
					t.Errorf("nothing is granted by default, got %+v", m.Permissions)
				}
			}},
		{"null limits and permissions", edit(t, func(m map[string]any) { m["limits"], m["permissions"] = nil, nil }), nil},
		{"export differs from name", edit(t, func(m map[string]any) { tool0(m)["export"] = "_start.x-y" }), func(t *testing.T, m *Manifest) {
			if m.Tools[0].Export != "_start.x-y" {
				t.Errorf("export = %q", m.Tools[0].Export)
			}
		}},
		{"limits at the ceilings", edit(t, func(m map[string]any) {
			m["limits"] = map[string]any{"memory_pages": MaxMemoryPages, "timeout_ms": MaxTimeoutMS, "max_output_bytes": MaxOutputBytes}
		}), func(t *testing.T, m *Manifest) {
			if got := m.Limits.Effective(); got != m.Limits {
				t.Errorf("Effective changed explicit limits: %+v", got)
			}
		}},
		{"hosts and paths", edit(t, func(m map[string]any) {
			m["permissions"] = map[string]any{
				"allowed_hosts": []any{"example.com", "*.example.com", "api.x-y.io", "localhost", "a1.b2", "xn--bcher-kva.example"},
				"allowed_paths": map[string]any{"/srv/data": "/data", "/tmp/a b": "/mnt/x"},
			}
		}), nil},
		{"newline, tab and unicode in descriptions", edit(t, func(m map[string]any) {
			m["description"] = "Line one\n\tLine two: café, 東京, emoji 👩 💻, arrows ←→"
			tool0(m)["description"] = "ok\nok"
		}), nil},
		{"description at the limit", edit(t, func(m map[string]any) { tool0(m)["description"] = strings.Repeat("a", MaxDescriptionLen) }), nil},
		{"prerelease and build version", edit(t, func(m map[string]any) { m["version"] = "1.2.3-rc.1+build.5" }), nil},
		{"name of 64 characters", edit(t, func(m map[string]any) { m["name"] = "a" + strings.Repeat("b-_9", 15) + "xyz" }), nil},
		{"tool names of every allowed kind", edit(t, func(m map[string]any) {
			m["tools"] = []any{
				map[string]any{"name": "A", "description": "d", "parameters": map[string]any{"type": "object"}},
				map[string]any{"name": "b-C_9", "description": "d", "parameters": map[string]any{"type": "object"}},
				map[string]any{"name": "x" + strings.Repeat("y", 63), "description": "d", "parameters": map[string]any{"type": "object"}},
			}
		}), nil},
		{"MaxTools tools", edit(t, func(m map[string]any) { m["tools"] = makeTools(MaxTools) }), nil},
		{"internal $ref", edit(t, func(m map[string]any) {
			tool0(m)["parameters"] = map[string]any{"type": "object", "$defs": map[string]any{"s": map[string]any{"type": "string"}},
				"properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/s"}}}
		}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tt.doc))
			if err != nil {
				t.Fatalf("refused: %v\n%s", err, tt.doc)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

func TestParseManifestRefusals(t *testing.T) {
	setName := func(v any) string { return edit(t, func(m map[string]any) { m["name"] = v }) }
	setVersion := func(v any) string { return edit(t, func(m map[string]any) { m["version"] = v }) }
	setWasm := func(v any) string { return edit(t, func(m map[string]any) { m["wasm"] = v }) }
	setTool := func(k string, v any) string { return edit(t, func(m map[string]any) { tool0(m)[k] = v }) }
	delTool := func(k string) string { return edit(t, func(m map[string]any) { delete(tool0(m), k) }) }
	setParams := func(v any) string { return setTool("parameters", v) }
	setLimit := func(k string, v any) string {
		return edit(t, func(m map[string]any) { m["limits"].(map[string]any)[k] = v })
	}
	setHosts := func(h ...any) string {
		return edit(t, func(m map[string]any) { m["permissions"].(map[string]any)["allowed_hosts"] = h })
	}
	setPaths := func(p any) string {
		return edit(t, func(m map[string]any) { m["permissions"].(map[string]any)["allowed_paths"] = p })
	}
	manyHosts := make([]any, MaxAllowedHosts+1)
	for i := range manyHosts {
		manyHosts[i] = fmt.Sprintf("h%d.example.com", i)
	}
	manyPaths := map[string]any{}
	for i := 0; i <= MaxAllowedPaths; i++ {
		manyPaths[fmt.Sprintf("/p%d", i)] = fmt.Sprintf("/g%d", i)
	}
	hugeSchema := map[string]any{"type": "object", "description": strings.Repeat("x", MaxParameterBytes)}

	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		// Names.
		{"empty name", setName(""), `name "" must match`},
		{"uppercase name", setName("Time"), `name "Time" must match`},
		{"name starts with digit", setName("1time"), "must match"},
		{"name starts with dash", setName("-time"), "must match"},
		{"name with dot", setName("time.x"), "must match"},
		{"name with space", setName("my time"), "must match"},
		{"name with slash", setName("../time"), "must match"},
		{"name with newline at end", setName("time\n"), "must match"},
		{"non-ASCII name", setName("tíme"), "must match"},
		{"name of 65 characters", setName("a" + strings.Repeat("b", 64)), "must match"},
		{"name not a string", setName(1), "name: got number, want a string"},
		{"name missing", edit(t, func(m map[string]any) { delete(m, "name") }), "must match"},

		// Versions.
		{"version missing", edit(t, func(m map[string]any) { delete(m, "version") }), `version: "" is not a semantic version`},
		{"version with two parts", setVersion("1.0"), "not a semantic version"},
		{"version with v", setVersion("v1.0.0"), "not a semantic version"},
		{"version with leading zero", setVersion("01.0.0"), "not a semantic version"},
		{"prerelease with leading zero", setVersion("1.0.0-01"), "not a semantic version"},
		{"empty prerelease", setVersion("1.0.0-"), "not a semantic version"},
		{"empty build", setVersion("1.0.0+"), "not a semantic version"},
		{"version too long", setVersion("1.0.0-" + strings.Repeat("a", 60)), "not a semantic version"},
		{"version overflows", setVersion("18446744073709551616.0.0"), "number too large"},
		{"version as number", setVersion(1), "version: got number"},

		// Wasm file names.
		{"wasm missing", edit(t, func(m map[string]any) { delete(m, "wasm") }), `wasm "" must be a plain file name`},
		{"wasm in parent dir", setWasm("../plugin.wasm"), "plain file name"},
		{"wasm in subdir", setWasm("dir/plugin.wasm"), "plain file name"},
		{"absolute wasm", setWasm("/plugin.wasm"), "plain file name"},
		{"wasm with backslash", setWasm(`dir\plugin.wasm`), "plain file name"},
		{"wasm not .wasm", setWasm("plugin.wat"), "plain file name"},
		{"wasm only extension", setWasm(".wasm"), "plain file name"},
		{"hidden wasm", setWasm(".p.wasm"), "plain file name"},
		{"wasm uppercase extension", setWasm("plugin.WASM"), "plain file name"},
		{"wasm with NUL", setWasm("p\x00.wasm"), "plain file name"},

		// Tools.
		{"tools missing", edit(t, func(m map[string]any) { delete(m, "tools") }), "at least one tool"},
		{"tools empty", edit(t, func(m map[string]any) { m["tools"] = []any{} }), "at least one tool"},
		{"tools null", edit(t, func(m map[string]any) { m["tools"] = nil }), "at least one tool"},
		{"too many tools", edit(t, func(m map[string]any) { m["tools"] = makeTools(MaxTools + 1) }), "65 tools, the limit is 64"},
		{"tools not an array", edit(t, func(m map[string]any) { m["tools"] = map[string]any{} }), "$.tools must be an array"},
		{"tool not an object", edit(t, func(m map[string]any) { m["tools"] = []any{"x"} }), "$.tools[0] must be an object"},
		{"tool name empty", setTool("name", ""), `tools[0].name "" must match`},
		{"tool name missing", delTool("name"), `tools[0].name "" must match`},
		{"tool name starts with digit", setTool("name", "1tool"), "must match"},
		{"tool name starts with underscore", setTool("name", "_tool"), "must match"},
		{"tool name with space", setTool("name", "get time"), "must match"},
		{"tool name with dot", setTool("name", "get.time"), "must match"},
		{"tool name with slash", setTool("name", "a/b"), "must match"},
		{"tool name with colon", setTool("name", "ns:tool"), "must match"},
		{"tool name non-ASCII", setTool("name", "tíme"), "must match"},
		{"tool name of 65 characters", setTool("name", "a"+strings.Repeat("b", 64)), "must match"},
		{"duplicate tool names", edit(t, func(m map[string]any) {
			m["tools"] = append(m["tools"].([]any), tool0(m))
		}), `tools[1].name "get_current_time" is defined twice`},
		{"case-variant tool names", edit(t, func(m map[string]any) {
			dup := map[string]any{"name": "Get_Current_Time", "description": "d", "parameters": map[string]any{"type": "object"}}
			m["tools"] = append(m["tools"].([]any), dup)
		}), "compared case-insensitively"},
		{"description missing", delTool("description"), "description is required"},
		{"description empty", setTool("description", ""), "description is required"},
		{"export starts with digit", setTool("export", "1x"), "not a valid export name"},
		{"export with space", setTool("export", "a b"), "not a valid export name"},
		{"export with slash", setTool("export", "a/b"), "not a valid export name"},

		// Parameters.
		{"parameters missing", delTool("parameters"), `parameters: missing`},
		{"parameters null", setParams(nil), "the root must be a JSON Schema object"},
		{"parameters a string", setParams("object"), "the root must be a JSON Schema object"},
		{"parameters an array", setParams([]any{}), "the root must be a JSON Schema object"},
		{"parameters true", setParams(true), "the root must be a JSON Schema object"},
		{"parameters without type", setParams(map[string]any{"properties": map[string]any{}}), `"type": "object"`},
		{"parameters of type string", setParams(map[string]any{"type": "string"}), `"type": "object"`},
		{"parameters with type list", setParams(map[string]any{"type": []any{"object"}}), `"type": "object"`},
		{"remote $ref", setParams(map[string]any{"type": "object", "$ref": "https://evil.example/schema.json"}), "only references inside the schema"},
		{"relative $ref", setParams(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "other.json#/x"}}}), "only references inside the schema"},
		{"file $ref", setParams(map[string]any{"type": "object", "$defs": map[string]any{"x": map[string]any{"$ref": "file:///etc/passwd"}}}), "only references inside the schema"},
		{"$ref not a string", setParams(map[string]any{"type": "object", "$ref": 1}), "only references inside the schema"},
		{"remote $dynamicRef", setParams(map[string]any{"type": "object", "$dynamicRef": "https://evil.example/x"}), "only references inside the schema"},
		{"$ref in array items", setParams(map[string]any{"type": "object", "allOf": []any{map[string]any{"$ref": "https://e.example/"}}}), "only references inside the schema"},
		{"$id at the root", setParams(map[string]any{"type": "object", "$id": "https://evil.example/"}), "$id is not allowed"},
		{"nested $id", setParams(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$id": "x"}}}), "$id is not allowed"},
		{"remote $schema", setParams(map[string]any{"type": "object", "$schema": "https://evil.example/meta"}), "refused"},
		{"dangling internal $ref", setParams(map[string]any{"type": "object", "$ref": "#/$defs/missing"}), "not a valid schema"},
		{"invalid keyword value", setParams(map[string]any{"type": "object", "minProperties": "x"}), "not a valid schema"},
		{"unknown type", setParams(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "nope"}}}), "not a valid schema"},
		{"parameters too big", setParams(hugeSchema), "bytes, the limit is 65536"},
		{"duplicate key in parameters", replace(t, `"properties": {"timezone"`, `"properties": {"a": {}, "a": {}, "timezone"`), `duplicate key "a" in $.tools[0].parameters.properties`},
		{"duplicate keyword in parameters", replace(t, `{"type": "object", "properties"`, `{"type": "object", "type": "string", "properties"`), `duplicate key "type"`},
		{"hidden character in a property description", setParams(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "description": "safe\u202eelif etad"}}}), "U+202E"},
		{"hidden character in a property name", setParams(map[string]any{"type": "object", "properties": map[string]any{"a\u200fb": map[string]any{}}}), "U+200F"},

		// Limits.
		{"memory over ceiling", setLimit("memory_pages", MaxMemoryPages+1), "limits.memory_pages 4097 is above the ceiling of 4096"},
		{"timeout over ceiling", setLimit("timeout_ms", MaxTimeoutMS+1), "limits.timeout_ms 60001 is above the ceiling"},
		{"output over ceiling", setLimit("max_output_bytes", MaxOutputBytes+1), "limits.max_output_bytes 16777217 is above the ceiling"},
		{"negative limit", setLimit("memory_pages", -1), "limits.memory_pages: got number -1, want a whole number from 0 to"},
		{"fractional limit", setLimit("timeout_ms", 1.5), "limits.timeout_ms: got number 1.5, want a whole number"},
		{"limit beyond uint32", setLimit("max_output_bytes", 1<<32), "limits.max_output_bytes: got number 4294967296, want a whole number from 0 to 4294967295"},
		{"limit as string", setLimit("memory_pages", "64"), "limits.memory_pages: got string, want a whole number"},
		{"unknown limit", setLimit("cpu", 1), `unknown key "cpu" in $.limits`},
		{"limits an array", edit(t, func(m map[string]any) { m["limits"] = []any{} }), "$.limits must not be an array"},

		// Hosts.
		{"wildcard everything", setHosts("*"), `"*" is not a lowercase host name`},
		{"empty host", setHosts(""), "is not a lowercase host name"},
		{"uppercase host", setHosts("Example.com"), "is not a lowercase host name"},
		{"host with port", setHosts("example.com:443"), "is not a lowercase host name"},
		{"URL as host", setHosts("https://example.com"), "is not a lowercase host name"},
		{"host with path", setHosts("example.com/x"), "is not a lowercase host name"},
		{"host with trailing dot", setHosts("example.com."), "is not a lowercase host name"},
		{"host with empty label", setHosts("a..example.com"), "is not a lowercase host name"},
		{"label starts with dash", setHosts("-a.example.com"), "is not a lowercase host name"},
		{"label ends with dash", setHosts("a-.example.com"), "is not a lowercase host name"},
		{"label too long", setHosts(strings.Repeat("a", 64) + ".com"), "is not a lowercase host name"},
		{"wildcard in the middle", setHosts("a.*.example.com"), "is not a lowercase host name"},
		{"double wildcard", setHosts("*.*.example.com"), "is not a lowercase host name"},
		{"partial wildcard", setHosts("*a.example.com"), "is not a lowercase host name"},
		{"host with underscore", setHosts("a_b.example.com"), "is not a lowercase host name"},
		{"IPv4 address", setHosts("127.0.0.1"), "IP addresses and ports are not accepted"},
		{"private IPv4 address", setHosts("10.0.0.1"), "IP addresses and ports are not accepted"},
		{"short IPv4 form", setHosts("127.1"), "IP addresses and ports are not accepted"},
		{"integer IPv4 form", setHosts("2130706433"), "IP addresses and ports are not accepted"},
		{"hex IPv4 form", setHosts("0x7f000001"), "IP addresses and ports are not accepted"},
		{"wildcard over an address", setHosts("*.0.0.1"), "IP addresses and ports are not accepted"},
		{"IPv6 address", setHosts("::1"), "is not a lowercase host name"},
		{"bracketed IPv6", setHosts("[::1]"), "is not a lowercase host name"},
		{"non-ASCII host", setHosts("bücher.example"), "is not a lowercase host name"},
		{"host not a string", setHosts(1), "permissions.allowed_hosts: got number, want a string"},
		{"hosts not an array", edit(t, func(m map[string]any) { m["permissions"].(map[string]any)["allowed_hosts"] = "example.com" }), "permissions.allowed_hosts: got string, want an array of strings"},
		{"too many hosts", setHosts(manyHosts...), "65 entries, the limit is 64"},

		// Paths.
		{"relative host path", setPaths(map[string]any{"data": "/data"}), `"data" must be an absolute, clean path`},
		{"relative guest path", setPaths(map[string]any{"/data": "data"}), `"data" must be an absolute, clean path`},
		{"dot-dot host path", setPaths(map[string]any{"/srv/../etc": "/data"}), "must be an absolute, clean path"},
		{"dot-dot guest path", setPaths(map[string]any{"/srv": "/data/.."}), "must be an absolute, clean path"},
		{"trailing slash", setPaths(map[string]any{"/srv/": "/data"}), "must be an absolute, clean path"},
		{"double slash", setPaths(map[string]any{"//srv": "/data"}), "must be an absolute, clean path"},
		{"empty guest path", setPaths(map[string]any{"/srv": ""}), "must be an absolute, clean path"},
		{"NUL in path", setPaths(map[string]any{"/srv\x00/x": "/data"}), "must be an absolute, clean path"},
		{"whole file system", setPaths(map[string]any{"/": "/host"}), "granting the whole file system is not allowed"},
		{"paths an array", setPaths([]any{"/srv"}), "permissions.allowed_paths: got array, want an object"},
		{"path value not a string", setPaths(map[string]any{"/srv": 1}), "got number, want a string"},
		{"too many paths", setPaths(manyPaths), "17 entries, the limit is 16"},
		{"two host directories on one guest path", setPaths(map[string]any{"/b": "/data", "/a": "/data", "/c": "/other"}),
			`"/a" and "/b" are both mapped to guest path "/data"; the plugin would see only one of them — give each host directory its own guest path (e.g. "/data/b")`},
		{"duplicate path", replace(t, `"allowed_paths": {}`, `"allowed_paths": {"/a": "/x", "/a": "/y"}`), `duplicate key "/a" in $.permissions.allowed_paths`},

		// Hidden characters in descriptions.
		{"RLO in plugin description", edit(t, func(m map[string]any) { m["description"] = "abc\u202edef" }), "description contains U+202E RIGHT-TO-LEFT OVERRIDE at character 4"},
		{"LRI in tool description", setTool("description", "a\u2066b"), "tools[0].description contains U+2066 LEFT-TO-RIGHT ISOLATE at character 2"},
		{"PDI in tool description", setTool("description", "a\u2069b"), "U+2069"},
		{"RLM in tool description", setTool("description", "a\u200fb"), "U+200F"},
		{"ALM in tool description", setTool("description", "a\u061cb"), "U+061C"},
		{"BEL", setTool("description", "a\ab"), "U+0007"},
		{"carriage return", setTool("description", "a\rb"), "U+000D"},
		{"escape sequence", setTool("description", "a\x1b[8mhidden\x1b[0m"), "U+001B"},
		{"DEL", setTool("description", "a\x7fb"), "U+007F"},
		{"C1 NEL", setTool("description", "a\u0085b"), "U+0085"},
		{"C1 CSI", setTool("description", "a\u009bb"), "U+009B"},
		{"tag characters", setTool("description", "ok\U000E0049\U000E0067\U000E006E"), "U+E0049"},
		{"plugin description too long", edit(t, func(m map[string]any) { m["description"] = strings.Repeat("a", MaxDescriptionLen+1) }), "description is 4097 bytes, the limit is 4096"},
		{"tool description too long", setTool("description", strings.Repeat("é", MaxDescriptionLen/2+1)), "tools[0].description is 4098 bytes"},

		// Strict JSON: duplicate, case-variant and unknown keys, and the rest.
		{"duplicate top-level key", replace(t, `"name": "time",`, `"name": "time", "name": "evil",`), `duplicate key "name" in $`},
		{"duplicate tool key", replace(t, `"export": "get_current_time",`, `"export": "get_current_time", "export": "rm_rf",`), `duplicate key "export" in $.tools[0]`},
		{"duplicate permissions key", replace(t, `"allowed_hosts": []`, `"allowed_hosts": [], "allowed_hosts": ["*.example.com"]`), `duplicate key "allowed_hosts" in $.permissions`},
		{"case-variant allowed_hosts", replace(t, `"allowed_hosts": []`, `"allowed_hosts":[],"Allowed_Hosts":["*"]`), `key "Allowed_Hosts" in $.permissions differs from "allowed_hosts" only in case: keys are case-sensitive`},
		{"case-variant top-level key", replace(t, `"wasm": "plugin.wasm",`, `"wasm": "plugin.wasm", "WASM": "evil.wasm",`), "keys are case-sensitive"},
		{"case-variant limits key", replace(t, `"timeout_ms": 2000`, `"timeout_ms": 2000, "Timeout_MS": 60000`), "keys are case-sensitive"},
		{"case-variant tool key", replace(t, `"export": "get_current_time",`, `"Export": "x",`), "keys are case-sensitive"},
		{"unknown top-level key", replace(t, `"wasm": "plugin.wasm",`, `"wasm": "plugin.wasm", "entrypoint": "x",`), `unknown key "entrypoint" in $`},
		{"unknown tool key", replace(t, `"export": "get_current_time",`, `"export": "get_current_time", "exports": [],`), `unknown key "exports" in $.tools[0]`},
		{"unknown permission", replace(t, `"allowed_paths": {}`, `"allowed_paths": {}, "network": true`), `unknown key "network" in $.permissions`},
		{"invalid UTF-8", replace(t, "Clock and", "Clock \xff and"), "not valid UTF-8"},
		{"trailing data", baseManifest + `{"name":"other"}`, "unexpected data after the JSON value"},
		{"trailing garbage", baseManifest + "\x00", "unexpected data after the JSON value"},
		{"truncated", baseManifest[:len(baseManifest)-1], "invalid JSON document"},
		{"lone surrogate escape", replace(t, "Clock and", `Clock \ud800 and`), "unpaired UTF-16 surrogate"},
		{"top-level array", `[` + baseManifest + `]`, "$ must not be an array"},
		{"top-level null", `null`, "must match"},
		{"empty", ``, "document ends early"},
		{"too large", replace(t, "Clock and", "Clock"+strings.Repeat(" ", MaxManifestBytes)+"and"), "the limit is 262144"},
		{"too deep", replace(t, `"properties": {"timezone"`, `"x": `+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`, "properties": {"timezone"`), "nested deeper than 64 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tt.doc))
			if err == nil {
				t.Fatalf("accepted; want an error containing %q\n%.2000s", tt.wantErr, tt.doc)
			}
			if m != nil {
				t.Error("returned a manifest with the error")
			}
			if !errors.Is(err, ErrInvalidManifest) {
				t.Errorf("error does not wrap ErrInvalidManifest: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q\ndoes not contain %q", err, tt.wantErr)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("error message is %d bytes: quote less of the input", len(err.Error()))
			}
		})
	}
}

func TestHiddenRune(t *testing.T) {
	for _, r := range []rune{0, 7, '\r', 0x1b, 0x7f, 0x80, 0x85, 0x9f, 0x061c, 0x200e, 0x200f, 0x202a, 0x202e, 0x2066, 0x2069, 0xe0000, 0xe0041, 0xe007f,
		0x00ad, 0x034f, 0x115f, 0x180b, 0x180e, 0x200b, 0x200c, 0x200d, 0x2028, 0x2029, 0x2060, 0x2064, 0x3164, 0xfe00, 0xfe0f, 0xfeff, 0xffa0, 0xe0001, 0xe0100, 0xe01ef} {
		if !hiddenRune(r) {
			t.Errorf("%U is not refused", r)
		}
	}
	for _, r := range []rune{'\n', '\t', ' ', 'a', 0xa0, 0xe9, 0x3000, 0x2190, 0x1f600, 0x1f469} {
		if hiddenRune(r) {
			t.Errorf("%U is refused", r)
		}
	}
}
