package plugin

import (
	"fmt"
	"path"
)

// Hook events.
const (
	HookBeforeCall = "before_call"
	HookAfterCall  = "after_call"
)

// Hook is one export of a policy plugin that the host calls around the
// calls of the tools its globs match. before_call gets
// {"tool","plugin","arguments","entry"} and answers {"action":"allow"},
// {"action":"deny","reason":…} or {"action":"rewrite","arguments":{…}};
// after_call gets {"tool","plugin","arguments","result"} and answers
// {"result":…} or a deny. Hooks run in ascending Priority, ties by plugin
// name.
type Hook struct {
	Event  string `json:"event"`
	Export string `json:"export"`
	// Tools are globs (path.Match syntax: * and ?) over tool names.
	Tools    []string `json:"tools"`
	Priority int      `json:"priority,omitempty"`
}

// Sees reports whether the hook is called for the tool named tool.
func (h *Hook) Sees(tool string) bool {
	for _, g := range h.Tools {
		if MatchGlob(g, tool) {
			return true
		}
	}
	return false
}

// MatchGlob reports whether a tool-name glob (* and ? wildcards) matches
// name. A malformed glob matches nothing.
func MatchGlob(glob, name string) bool {
	ok, err := path.Match(glob, name)
	return err == nil && ok
}

// ValidGlob checks a tool-name glob: tool-name characters plus * and ?.
func ValidGlob(glob string) error {
	if !globRE.MatchString(glob) {
		return fmt.Errorf("%q is not a tool-name glob: use up to 64 of a-z A-Z 0-9 _ - and the wildcards * and ?", truncate(glob))
	}
	return nil
}

func (m *Manifest) validateHooks() error {
	if len(m.Hooks) > MaxHooks {
		return invalid("hooks: %d hooks, the limit is %d", len(m.Hooks), MaxHooks)
	}
	seen := map[[2]string]bool{}
	for i := range m.Hooks {
		h := &m.Hooks[i]
		if h.Event != HookBeforeCall && h.Event != HookAfterCall {
			return invalid("hooks[%d].event %q: use %q or %q", i, truncate(h.Event), HookBeforeCall, HookAfterCall)
		}
		if !exportRE.MatchString(h.Export) {
			return invalid("hooks[%d].export %q is not a valid export name", i, truncate(h.Export))
		}
		key := [2]string{h.Event, h.Export}
		if seen[key] {
			return invalid("hooks[%d]: %s hook %s is declared twice", i, h.Event, h.Export)
		}
		seen[key] = true
		if len(h.Tools) == 0 {
			return invalid(`hooks[%d].tools: name the tools the hook sees (globs, e.g. ["*"] for all)`, i)
		}
		if len(h.Tools) > MaxHookGlobs {
			return invalid("hooks[%d].tools: %d globs, the limit is %d", i, len(h.Tools), MaxHookGlobs)
		}
		for _, g := range h.Tools {
			if err := ValidGlob(g); err != nil {
				return invalid("hooks[%d].tools: %v", i, err)
			}
		}
		if h.Priority < -MaxHookPriority || h.Priority > MaxHookPriority {
			return invalid("hooks[%d].priority %d is outside ±%d", i, h.Priority, MaxHookPriority)
		}
	}
	return nil
}
