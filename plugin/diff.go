package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Change is one difference between two versions of a plugin.
type Change struct {
	// Kind is "permission", "limit" or "tool".
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
		}
	}
	for _, t := range old.Tools {
		if _, has := new.Tool(t.Name); !has {
			add("tool", false, "tool %s removed", t.Name)
		}
	}
	return out
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
