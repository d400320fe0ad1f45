// Package govern stands between a validated call and the sandbox: the
// operator's approval policy (allow, ask, deny), policy plugins' hooks, and
// the pending approvals a person decides. Governor implements
// host.Governor.
package govern

import (
	"strings"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// Effective is the approval policy that applies to one tool.
type Effective struct {
	Tool   string `json:"tool"`
	Plugin string `json:"plugin,omitempty"`
	Action string `json:"action"` // allow, ask, deny
	// Source says why: `rule "delete_*"` or `default (needs_approval)`.
	Source string `json:"source"`
}

// Resolve picks the rule for tool. The most specific pattern wins: an exact
// tool name beats every glob; among globs, the one with more literal
// (non-wildcard) characters wins; on a tie the stricter action wins (deny
// over ask over allow). Without a matching rule the default applies: ask
// for a tool that needs_approval or is annotated destructive, allow
// otherwise.
func Resolve(t *plugin.Tool, rules []store.PolicyRule) Effective {
	best := -1
	for i, r := range rules {
		if !plugin.MatchGlob(r.Pattern, t.Name) {
			continue
		}
		if best < 0 || moreSpecific(r, rules[best]) {
			best = i
		}
	}
	if best >= 0 {
		return Effective{Tool: t.Name, Action: rules[best].Action, Source: `rule "` + rules[best].Pattern + `"`}
	}
	switch {
	case t.NeedsApproval:
		return Effective{Tool: t.Name, Action: store.PolicyAsk, Source: "default (needs_approval)"}
	case t.Destructive():
		return Effective{Tool: t.Name, Action: store.PolicyAsk, Source: "default (destructive)"}
	}
	return Effective{Tool: t.Name, Action: store.PolicyAllow, Source: "default"}
}

func moreSpecific(a, b store.PolicyRule) bool {
	if sa, sb := specificity(a.Pattern), specificity(b.Pattern); sa != sb {
		return sa > sb
	}
	return strictness(a.Action) > strictness(b.Action)
}

// specificity ranks a pattern: exact names above all globs, then globs by
// their count of literal characters.
func specificity(p string) int {
	wild := strings.Count(p, "*") + strings.Count(p, "?")
	if wild == 0 {
		return 1 << 20
	}
	return len(p) - wild
}

func strictness(action string) int {
	switch action {
	case store.PolicyDeny:
		return 2
	case store.PolicyAsk:
		return 1
	}
	return 0
}
