package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Change is one difference between two versions of a plugin.
type Change struct {
	// Kind is "permission", "limit", "tool" or "hook".
	Kind string `json:"kind"`
	// Text says what changed, for people.
	Text string `json:"text"`
	// Widens is true when the change grants the plugin something the old
	// version did not have.
	Widens bool `json:"widens,omitempty"`
}

// Diff lists what changes from old to new: permissions, limits and tool
// definitions (names, descriptions, schemas: where tool poisoning hides).
func Diff(old, new *Manifest) []Change {
	var out []Change
	add := func(kind string, widens bool, format string, args ...any) {
		out = append(out, Change{Kind: kind, Text: fmt.Sprintf(format, args...), Widens: widens})
	}
	for _, h := range new.Permissions.AllowedHosts {
		if !slices.Contains(old.Permissions.AllowedHosts, h) {
			add("permission", true, "network: may now reach %s", h)
		}
	}
	for _, h := range old.Permissions.AllowedHosts {
		if !slices.Contains(new.Permissions.AllowedHosts, h) {
			add("permission", false, "network: may no longer reach %s", h)
		}
	}
	for _, hp := range sortedKeys(new.Permissions.AllowedPaths) {
		gp := new.Permissions.AllowedPaths[hp]
		switch oldGP, had := old.Permissions.AllowedPaths[hp]; {
		case !had:
			add("permission", true, "files: may now read %s (as %s)", hp, gp)
		case oldGP != gp:
			add("permission", false, "files: %s now visible as %s (was %s)", hp, gp, oldGP)
		}
	}
	for _, hp := range sortedKeys(old.Permissions.AllowedPaths) {
		if _, has := new.Permissions.AllowedPaths[hp]; !has {
			add("permission", false, "files: may no longer read %s", hp)
		}
	}
	if new.ReuseInstances != old.ReuseInstances {
		if new.ReuseInstances {
			add("permission", true, "isolation: calls may now share one instance (state can carry from one call to the next)")
		} else {
			add("permission", false, "isolation: every call gets a fresh instance again")
		}
	}
	ol, nl := old.Limits.Effective(), new.Limits.Effective()
	for _, l := range []struct {
		name     string
		old, new uint32
		unit     string
	}{
		{"memory", ol.MemoryPages, nl.MemoryPages, "pages"},
		{"timeout", ol.TimeoutMS, nl.TimeoutMS, "ms"},
		{"output", ol.MaxOutputBytes, nl.MaxOutputBytes, "bytes"},
	} {
		if l.old != l.new {
			add("limit", false, "%s limit: %d -> %d %s", l.name, l.old, l.new, l.unit)
		}
	}
	for _, t := range new.Tools {
		ot, had := old.Tool(t.Name)
		switch {
		case !had:
			add("tool", false, "new tool %s: %q", t.Name, t.Description)
		default:
			if ot.Description != t.Description {
				add("tool", false, "tool %s: description changed to %q", t.Name, t.Description)
			}
			if !jsonEqual(ot.Parameters, t.Parameters) {
				add("tool", false, "tool %s: parameters schema changed to %s", t.Name, compact(t.Parameters))
			}
			if ot.Export != t.Export {
				add("tool", false, "tool %s: now runs export %s (was %s)", t.Name, t.Export, ot.Export)
			}
			diffToolGovernance(ot, &t, add)
		}
	}
	for _, t := range old.Tools {
		if _, has := new.Tool(t.Name); !has {
			add("tool", false, "tool %s removed", t.Name)
		}
	}

	diffHooks(old.Hooks, new.Hooks, add)
	diffSecrets(old, new, add)
	return out
}

type addFunc func(kind string, widens bool, format string, args ...any)

// diffToolGovernance compares what decides whether a call needs a person
// (turning that off widens) and what a result must look like.
func diffToolGovernance(ot, t *Tool, add addFunc) {
	if ot.NeedsApproval && !t.NeedsApproval {
		add("tool", true, "tool %s: no longer needs approval", t.Name)
	} else if !ot.NeedsApproval && t.NeedsApproval {
		add("tool", false, "tool %s: now needs approval", t.Name)
	}
	if ot.Destructive() && !t.Destructive() {
		add("tool", true, "tool %s: no longer marked destructive (its default approval policy may become allow)", t.Name)
	} else if !ot.Destructive() && t.Destructive() {
		add("tool", false, "tool %s: now marked destructive", t.Name)
	}
	if !jsonEqual(ot.OutputSchema, t.OutputSchema) {
		add("tool", false, "tool %s: output schema changed to %s", t.Name, orNoneJSON(t.OutputSchema))
	}
	oa, na := annotationsOf(ot), annotationsOf(t)
	if oa != na {
		add("tool", false, "tool %s: annotations changed to %+v", t.Name, na)
	}
}

func annotationsOf(t *Tool) Annotations {
	if t.Annotations == nil {
		return Annotations{}
	}
	return *t.Annotations
}

func orNoneJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "none"
	}
	return compact(raw)
}

// diffHooks compares hooks by (event, export). A new hook, or one that
// now sees tools it did not (a glob it did not have), widens: hooks see
// every argument and result of the tools they match.
func diffHooks(old, new []Hook, add addFunc) {
	find := func(hs []Hook, h Hook) *Hook {
		for i := range hs {
			if hs[i].Event == h.Event && hs[i].Export == h.Export {
				return &hs[i]
			}
		}
		return nil
	}
	for _, h := range new {
		oh := find(old, h)
		if oh == nil {
			add("hook", true, "new %s hook %s sees tools %s (priority %d)", h.Event, h.Export, strings.Join(h.Tools, ", "), h.Priority)
			continue
		}
		var more []string
		for _, g := range h.Tools {
			if !slices.ContainsFunc(oh.Tools, func(og string) bool { return globCovers(og, g) }) {
				more = append(more, g)
			}
		}
		if len(more) > 0 {
			add("hook", true, "%s hook %s now also sees tools %s", h.Event, h.Export, strings.Join(more, ", "))
		}
		var fewer []string
		for _, g := range oh.Tools {
			if !slices.Contains(h.Tools, g) {
				fewer = append(fewer, g)
			}
		}
		if len(fewer) > 0 {
			add("hook", false, "%s hook %s no longer sees tools %s", h.Event, h.Export, strings.Join(fewer, ", "))
		}
		if oh.Priority != h.Priority {
			add("hook", false, "%s hook %s: priority %d -> %d", h.Event, h.Export, oh.Priority, h.Priority)
		}
	}
	for _, h := range old {
		if find(new, h) == nil {
			add("hook", false, "%s hook %s removed", h.Event, h.Export)
		}
	}
}

// globCovers reports whether every name glob g matches is certainly matched
// by outer. It answers false when unsure, so an upgrade is called widening
// rather than slipping through: equal globs; a literal that outer matches;
// outer "P*" (P free of wildcards) and g starting with P.
func globCovers(outer, g string) bool {
	switch {
	case outer == g:
		return true
	case !strings.ContainsAny(g, "*?"):
		return MatchGlob(outer, g)
	}
	prefix, isPrefixGlob := strings.CutSuffix(outer, "*")
	return isPrefixGlob && !strings.ContainsAny(prefix, "*?") && strings.HasPrefix(g, prefix)
}

// Widens reports whether any change grants something new.
func Widens(changes []Change) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Widens })
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func jsonEqual(a, b json.RawMessage) bool {
	return bytes.Equal([]byte(compact(a)), []byte(compact(b)))
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
