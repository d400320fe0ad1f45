package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/toolhost/toolhost/plugin"
)

// policyRulePrefix keys the operator's approval policy rules, one per
// pattern. They are security-relevant (a rule can turn an "ask" into an
// "allow", or drop a "deny"), so they are sealed like trust records
// (authenticatedPrefixes).
const policyRulePrefix = "policy/rule/"

// Approval policy actions.
const (
	PolicyAllow = "allow"
	PolicyAsk   = "ask"
	PolicyDeny  = "deny"
)

// PolicyRule is one operator rule: calls of tools matching Pattern (a tool
// name or a glob) are allowed, asked about or denied.
type PolicyRule struct {
	Pattern string    `json:"pattern"`
	Action  string    `json:"action"`
	SetAt   time.Time `json:"set_at"`
}

// ValidPolicyAction checks an approval policy action.
func ValidPolicyAction(a string) error {
	switch a {
	case PolicyAllow, PolicyAsk, PolicyDeny:
		return nil
	}
	return fmt.Errorf("policy action %q: use allow, ask or deny", a)
}

// ValidPolicyPattern checks a policy rule's pattern (a tool-name glob) as
// SetPolicy does.
func ValidPolicyPattern(pattern string) error {
	if err := plugin.ValidGlob(pattern); err != nil {
		return fmt.Errorf("store: policy pattern: %w", err)
	}
	return nil
}

// NoPolicyRuleError is UnsetPolicy's error for a pattern without a rule
// (errors.Is ErrNotFound).
func NoPolicyRuleError(pattern string) error {
	return fmt.Errorf("%w: no policy rule for %q (see `toolhost policy list`)", ErrNotFound, pattern)
}

// SetPolicy stores (or replaces) the rule for pattern.
func (s *Store) SetPolicy(r PolicyRule) error {
	if err := ValidPolicyPattern(r.Pattern); err != nil {
		return err
	}
	if err := ValidPolicyAction(r.Action); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	r.SetAt = r.SetAt.UTC()
	return putJSON(s, policyRulePrefix+r.Pattern, r, JournalEntry{Action: "policy_set", Subject: r.Pattern, Description: fmt.Sprintf("policy_set %s %s", r.Pattern, r.Action)})
}

// UnsetPolicy removes the rule for pattern.
func (s *Store) UnsetPolicy(pattern string) error {
	err := s.viewSealed(func(txn *badger.Txn) error {
		var r PolicyRule
		return getJSON(txn, policyRulePrefix+pattern, &r)
	})
	if errors.Is(err, ErrNotFound) {
		return NoPolicyRuleError(pattern)
	}
	if err != nil {
		return fmt.Errorf("%w: no policy rule for %q (see `toolhost policy list`)", err, pattern)
	}
	return deleteKey(s, policyRulePrefix+pattern, JournalEntry{Action: "policy_unset", Subject: pattern, Description: "policy_unset " + pattern})
}

// PolicyRules returns every rule, sorted by pattern. A record that does
// not read back as a valid rule for its key is ErrCorrupt: a policy that
// silently lost a deny would fail open.
func (s *Store) PolicyRules() ([]PolicyRule, error) {
	var out []PolicyRule
	err := s.viewSealed(func(txn *badger.Txn) error {
		return iterate(txn, policyRulePrefix, func(k string, v []byte) error {
			var r PolicyRule
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("%w: policy rule %q: %v", ErrCorrupt, k, err)
			}
			if r.Pattern != k || plugin.ValidGlob(k) != nil || ValidPolicyAction(r.Action) != nil {
				return fmt.Errorf("%w: policy rule %q does not match its key or is not valid", ErrCorrupt, k)
			}
			out = append(out, r)
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Pattern < out[j].Pattern })
	return out, err
}
