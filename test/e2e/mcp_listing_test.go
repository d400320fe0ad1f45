package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// What the reference client lists must be what the signed manifests
// declare.

// signedBundle writes sample plugin NAME as a bundle signed by the world's
// curator and returns its path.
func (w *world) signedBundle(name string) string {
	w.t.Helper()
	path := filepath.Join(w.dir, name+".plugin")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.WriteFile(path, testplugins.Bundle(w.t, name).Bytes(), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.run("curator", "sign", "--key", filepath.Join(w.dir, "alice.key"), path)
	return path
}

// manifestTool is a tool as its plugin.json declares it.
type manifestTool struct {
	Name         string          `json:"name"`
	Parameters   json.RawMessage `json:"parameters"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Annotations  *struct {
		Title       string `json:"title"`
		ReadOnly    bool   `json:"read_only"`
		Destructive bool   `json:"destructive"`
		Idempotent  bool   `json:"idempotent"`
		OpenWorld   bool   `json:"open_world"`
	} `json:"annotations"`
	icon string // the plugin's, shown on each of its tools
}

func manifestTools(t *testing.T, plugins ...string) map[string]manifestTool {
	t.Helper()
	tools := map[string]manifestTool{}
	for _, p := range plugins {
		data, err := os.ReadFile(filepath.Join(testplugins.Dir(t, p), "plugin.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Icon  string
			Tools []manifestTool
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s/plugin.json: %v", p, err)
		}
		for _, tl := range m.Tools {
			tl.icon = m.Icon
			tools[tl.Name] = tl
		}
	}
	return tools
}

// jsonEqual compares a decoded JSON value with raw JSON.
func jsonEqual(got any, want json.RawMessage) bool {
	var w any
	if json.Unmarshal(want, &w) != nil {
		return false
	}
	return reflect.DeepEqual(got, w)
}

// checkListedTools compares a list step's tools with the manifests: names,
// input schema, output schema and the MCP title and annotations.
func checkListedTools(t *testing.T, list map[string]any, want map[string]manifestTool) {
	t.Helper()
	tools, _ := list["tools"].([]any)
	var names []string
	for _, x := range tools {
		tl, _ := x.(map[string]any)
		name, _ := tl["name"].(string)
		names = append(names, name)
		m, ok := want[name]
		if !ok {
			t.Errorf("listed tool %q is in no installed manifest", name)
			continue
		}
		if !jsonEqual(tl["inputSchema"], m.Parameters) {
			t.Errorf("%s: inputSchema %v, manifest parameters %s", name, tl["inputSchema"], m.Parameters)
		}
		if m.OutputSchema == nil {
			if _, has := tl["outputSchema"]; has {
				t.Errorf("%s: outputSchema %v, but the manifest declares none", name, tl["outputSchema"])
			}
		} else if !jsonEqual(tl["outputSchema"], m.OutputSchema) {
			t.Errorf("%s: outputSchema %v, manifest output_schema %s", name, tl["outputSchema"], m.OutputSchema)
		}
		checkIcon(t, name, tl["icons"], m.icon)
		a := m.Annotations
		if a == nil {
			if tl["annotations"] != nil || tl["title"] != nil {
				t.Errorf("%s: title %v, annotations %v, but the manifest declares none", name, tl["title"], tl["annotations"])
			}
			continue
		}
		wantAnn := map[string]any{"title": a.Title, "readOnlyHint": a.ReadOnly, "destructiveHint": a.Destructive, "idempotentHint": a.Idempotent, "openWorldHint": a.OpenWorld}
		if !reflect.DeepEqual(tl["annotations"], wantAnn) {
			t.Errorf("%s: annotations %v, want %v (from the manifest)", name, tl["annotations"], wantAnn)
		}
		if tl["title"] != a.Title {
			t.Errorf("%s: title %v, want %q", name, tl["title"], a.Title)
		}
	}
	var wantNames []string
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(names)
	sort.Strings(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("tools %v, want %v", names, wantNames)
	}
}

// checkIcon: a plugin's icon reaches each of its tools as one MCP icon
// with the same data: URI and its media type; no icon, no icons.
func checkIcon(t *testing.T, tool string, icons any, want string) {
	t.Helper()
	list, _ := icons.([]any)
	if want == "" {
		if icons != nil {
			t.Errorf("%s: icons %v, but its plugin has none", tool, icons)
		}
		return
	}
	var icon map[string]any
	if len(list) == 1 {
		icon, _ = list[0].(map[string]any)
	}
	mime, _, _ := strings.Cut(strings.TrimPrefix(want, "data:"), ";")
	if icon == nil || icon["src"] != want || icon["mimeType"] != mime {
		t.Errorf("%s: icons %.200v, want one with the plugin's data: URI (%s)", tool, icons, mime)
	}
}
