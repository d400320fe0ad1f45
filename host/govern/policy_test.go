package govern

import (
	"testing"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

func TestResolveMostSpecificWins(t *testing.T) {
	rules := []store.PolicyRule{
		{Pattern: "*", Action: "allow"},
		{Pattern: "delete_*", Action: "deny"},
		{Pattern: "delete_note", Action: "ask"},
		{Pattern: "read_*", Action: "allow"},
		{Pattern: "rea?_*", Action: "deny"}, // fewer literals than read_*
		{Pattern: "ab*", Action: "allow"},
		{Pattern: "a?b*", Action: "ask"}, // same literal count as ab*: stricter wins
	}
	destructive := &plugin.Tool{Name: "wipe", Annotations: &plugin.Annotations{Destructive: true}}
	for _, tc := range []struct {
		tool       *plugin.Tool
		rules      []store.PolicyRule
		want, from string
	}{
		{&plugin.Tool{Name: "delete_note"}, rules, "ask", `rule "delete_note"`},
		{&plugin.Tool{Name: "delete_file"}, rules, "deny", `rule "delete_*"`},
		{&plugin.Tool{Name: "read_file"}, rules, "allow", `rule "read_*"`},
		{&plugin.Tool{Name: "abbc"}, rules, "ask", `rule "a?b*"`},
		{&plugin.Tool{Name: "other", NeedsApproval: true}, rules, "allow", `rule "*"`},
		{&plugin.Tool{Name: "other", NeedsApproval: true}, nil, "ask", "default (needs_approval)"},
		{destructive, nil, "ask", "default (destructive)"},
		{&plugin.Tool{Name: "get_time"}, nil, "allow", "default"},
	} {
		got := Resolve(tc.tool, tc.rules)
		if got.Action != tc.want || got.Source != tc.from {
			t.Errorf("Resolve(%s) = %s from %s, want %s from %s", tc.tool.Name, got.Action, got.Source, tc.want, tc.from)
		}
	}
}
