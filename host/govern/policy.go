// Package govern stands between a validated call and the sandbox: the
// operator's approval policy (allow, ask, deny), policy plugins' hooks, and
// the pending approvals a person decides. Governor implements
// host.Governor.
package govern

import (
	"fmt"
	"strings"
	"time"

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

// Rules returns the operator's rules, sorted by pattern.
func (g *Governor) Rules() []store.PolicyRule {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return append([]store.PolicyRule(nil), g.rules...)
}

// SetPolicy stores a rule, records it in the audit log, and applies it to
// the next call.
func (g *Governor) SetPolicy(pattern, action, actor string) error {
	err := g.journaled(actor, func() (string, string, string, error) {
		err := g.opts.Store.SetPolicy(store.PolicyRule{Pattern: pattern, Action: action, SetAt: time.Now()})
		if err == nil {
			err = g.reload()
		}
		return "policy_set", pattern, action, err
	})
	if err == nil && action == store.PolicyDeny {
		g.denyWaiting(pattern)
	}
	return err
}

// denyWaiting ends the calls waiting for approval that the policy now
// denies: a deny set during the wait would refuse them once approved
// anyway (beforeCall checks again), so they are not left waiting for a
// person or the timeout. Each is declined as by the operator who set the
// rule, over "policy", and audited as such.
func (g *Governor) denyWaiting(pattern string) {
	for _, p := range g.approvals.List() {
		if g.Effective(&plugin.Tool{Name: p.Tool}).Action != store.PolicyDeny {
			continue
		}
		// A call decided or ended meanwhile is not pending any more:
		// nothing to do.
		_ = g.approvals.Decide(p.ID, false, fmt.Sprintf("the policy rule %q, set while the call waited, denies it", pattern), "policy")
	}
}

// UnsetPolicy removes a rule.
func (g *Governor) UnsetPolicy(pattern, actor string) error {
	return g.journaled(actor, func() (string, string, string, error) {
		err := g.opts.Store.UnsetPolicy(pattern)
		if err == nil {
			err = g.reload()
		}
		return "policy_unset", pattern, "", err
	})
}

// journaled runs a policy change and records it (ChangeRecorder.Journaled).
func (g *Governor) journaled(actor string, change func() (string, string, string, error)) error {
	if g.opts.Audit == nil {
		_, _, _, err := change()
		return err
	}
	return g.opts.Audit.Journaled(actor, change)
}

// reload reads the rules again after a change.
func (g *Governor) reload() error {
	rules, err := g.opts.Store.PolicyRules()
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.rules = rules
	g.mu.Unlock()
	return nil
}

// Effective resolves the policy of a tool.
func (g *Governor) Effective(t *plugin.Tool) Effective {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return Resolve(t, g.rules)
}
