package plugin

import (
	"encoding/json"
	"strings"
	"testing"
)

// governed is baseManifest with every wave-2 field set.
func governed(t testing.TB) string {
	return edit(t, func(m map[string]any) {
		t0 := tool0(m)
		t0["output_schema"] = map[string]any{"type": "object", "properties": map[string]any{"time": map[string]any{"type": "string"}}}
		t0["annotations"] = map[string]any{"title": "Clock", "read_only": true, "idempotent": true, "open_world": false}
		t0["needs_approval"] = true
		m["hooks"] = []any{
			map[string]any{"event": "before_call", "export": "check", "tools": []any{"*"}, "priority": 10},
			map[string]any{"event": "after_call", "export": "redact", "tools": []any{"read_*"}},
		}
	})
}

func TestParseGovernanceFields(t *testing.T) {
	m, err := ParseManifest([]byte(governed(t)))
	if err != nil {
		t.Fatal(err)
	}
	tl := m.Tools[0]
	if !tl.NeedsApproval || tl.Annotations == nil || tl.Annotations.Title != "Clock" || !tl.Annotations.ReadOnly || tl.Destructive() {
		t.Errorf("tool governance fields: %+v %+v", tl, tl.Annotations)
	}
	if !strings.Contains(string(tl.OutputSchema), `"time"`) {
		t.Errorf("output_schema not kept: %s", tl.OutputSchema)
	}
	if len(m.Hooks) != 2 || m.Hooks[0].Priority != 10 || m.Hooks[1].Priority != 0 || m.Hooks[1].Tools[0] != "read_*" {
		t.Errorf("hooks: %+v", m.Hooks)
	}
	if got := m.Exports(); strings.Join(got, ",") != "get_current_time,check,redact" {
		t.Errorf("Exports() = %v", got)
	}
	if !m.Hooks[1].Sees("read_file") || m.Hooks[1].Sees("fetch_url") || !m.Hooks[0].Sees("anything") {
		t.Error("Hook.Sees does not follow its globs")
	}
}

func TestParseGovernanceRefusals(t *testing.T) {
	setTool := func(k string, v any) string { return edit(t, func(m map[string]any) { tool0(m)[k] = v }) }
	setHooks := func(h ...any) string { return edit(t, func(m map[string]any) { m["hooks"] = h }) }
	hook := func(kv ...any) map[string]any {
		h := map[string]any{"event": "before_call", "export": "check", "tools": []any{"*"}}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(h, kv[i].(string))
			} else {
				h[kv[i].(string)] = kv[i+1]
			}
		}
		return h
	}
	many := make([]any, MaxHooks+1)
	for i := range many {
		many[i] = hook("export", "h"+strings.Repeat("x", i))
	}
	tests := []struct{ name, doc, wantErr string }{
		{"output schema not object", setTool("output_schema", map[string]any{"type": "string"}), "output_schema"},
		{"output schema remote ref", setTool("output_schema", map[string]any{"type": "object", "$ref": "http://x/"}), "output_schema"},
		{"unknown annotation", setTool("annotations", map[string]any{"readOnlyHint": true}), "readOnlyHint"},
		{"case-variant annotation", setTool("annotations", map[string]any{"Destructive": true}), "Destructive"},
		{"annotation wrong type", setTool("annotations", map[string]any{"destructive": "yes"}), "destructive"},
		{"read_only and destructive", setTool("annotations", map[string]any{"read_only": true, "destructive": true}), "contradict"},
		{"hidden title", setTool("annotations", map[string]any{"title": "a\u202eb"}), "annotations.title contains U+202E RIGHT-TO-LEFT OVERRIDE"},
		{"needs_approval not bool", setTool("needs_approval", "true"), "needs_approval"},
		{"unknown hook key", setHooks(hook("when", "now")), "when"},
		{"bad event", setHooks(hook("event", "around_call")), `event "around_call"`},
		{"bad export", setHooks(hook("export", "a b")), "not a valid export"},
		{"no tools", setHooks(hook("tools", []any{})), "name the tools"},
		{"tools missing", setHooks(hook("tools", nil)), "name the tools"},
		{"bad glob", setHooks(hook("tools", []any{"read/*"})), "not a tool-name glob"},
		{"bracket glob", setHooks(hook("tools", []any{"[a-z]*"})), "not a tool-name glob"},
		{"priority huge", setHooks(hook("priority", 2_000_000)), "priority"},
		{"same hook twice", setHooks(hook(), hook("tools", []any{"a"})), "declared twice"},
		{"too many hooks", setHooks(many...), "limit is 16"},
		{"duplicate hook key", strings.Replace(governed(t), `"event":"after_call"`, `"event":"after_call","event":"before_call"`, 1), "duplicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q\ndoc: %s", err, tc.wantErr, tc.doc)
			}
		})
	}
}

func TestDiffGovernance(t *testing.T) {
	parse := func(doc string) *Manifest {
		t.Helper()
		m, err := ParseManifest([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := parse(governed(t))
	change := func(f func(m map[string]any)) *Manifest {
		var m map[string]any
		if err := json.Unmarshal([]byte(governed(t)), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return parse(string(b))
	}
	hooks := func(m map[string]any) []any { return m["hooks"].([]any) }
	tests := []struct {
		name   string
		new    *Manifest
		widens bool
		text   string
	}{
		{"new hook", change(func(m map[string]any) {
			m["hooks"] = append(hooks(m), map[string]any{"event": "after_call", "export": "log", "tools": []any{"x"}})
		}), true, "new after_call hook log"},
		{"hook sees more", change(func(m map[string]any) {
			hooks(m)[1].(map[string]any)["tools"] = []any{"read_*", "fetch_*"}
		}), true, "now also sees tools fetch_*"},
		{"hook sees fewer", change(func(m map[string]any) {
			hooks(m)[0].(map[string]any)["tools"] = []any{"read_*"}
		}), false, "no longer sees tools *"},
		{"hook removed", change(func(m map[string]any) { m["hooks"] = hooks(m)[:1] }), false, "after_call hook redact removed"},
		{"priority", change(func(m map[string]any) { hooks(m)[0].(map[string]any)["priority"] = 1 }), false, "priority 10 -> 1"},
		{"approval off", change(func(m map[string]any) { delete(tool0(m), "needs_approval") }), true, "no longer needs approval"},
		{"output schema", change(func(m map[string]any) { delete(tool0(m), "output_schema") }), false, "output schema changed to none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := Diff(base, tc.new)
			if Widens(ch) != tc.widens {
				t.Errorf("Widens = %v, want %v: %+v", !tc.widens, tc.widens, ch)
			}
			found := false
			for _, c := range ch {
				found = found || strings.Contains(c.Text, tc.text)
			}
			if !found {
				t.Errorf("no change says %q: %+v", tc.text, ch)
			}
		})
	}
	// destructive turned off widens.
	d := change(func(m map[string]any) { tool0(m)["annotations"] = map[string]any{"destructive": true} })
	nd := change(func(m map[string]any) { tool0(m)["annotations"] = map[string]any{"destructive": false} })
	if ch := Diff(d, nd); !Widens(ch) {
		t.Errorf("destructive turned off does not widen: %+v", ch)
	}
	if ch := Diff(nd, d); Widens(ch) {
		t.Errorf("destructive turned on widens: %+v", ch)
	}
	if ch := Diff(base, base); len(ch) != 0 {
		t.Errorf("no change, yet %+v", ch)
	}
}

func TestGlobCovers(t *testing.T) {
	for _, tc := range []struct {
		outer, g string
		want     bool
	}{
		{"*", "read_*", true}, {"*", "x", true}, {"read_*", "read_f*", true}, {"read_*", "read_file", true},
		{"read_*", "*", false}, {"read_?", "read_*", false}, {"read_file", "read_*", false}, {"a", "b", false},
		{"r?ad_*", "read_*", false},
	} {
		if got := globCovers(tc.outer, tc.g); got != tc.want {
			t.Errorf("globCovers(%q, %q) = %v, want %v", tc.outer, tc.g, got, tc.want)
		}
	}
}
