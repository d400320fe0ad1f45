package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// policyRule is the precedence rule, as `policy --help` and `policy list`
// say it.
const policyRule = `The most specific pattern wins: an exact tool name beats every glob; among
globs, the one with more literal (non-wildcard) characters wins; on a tie the
stricter action wins (deny, then ask, then allow). A tool no rule matches gets
the default: ask when its manifest says needs_approval or annotations.destructive,
allow otherwise.`

func newPolicyCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "The approval policy: which tool calls are allowed, asked about or denied",
		Long: `Rules map a tool name or a glob (delete_*, * and ? wildcards) to allow, ask or
deny. deny refuses calls with "denied"; ask holds each call until a person
approves it (` + "`toolhost approvals`" + `, POST /v1/approvals/{id}, or the MCP
client's user), or until serve --approval-timeout passes.

` + policyRule,
	}
	cmd.AddCommand(newPolicyListCmd(g), newPolicySetCmd(g), newPolicyUnsetCmd(g))
	return cmd
}

// withGovernance runs f with the governance API of this home: the running
// host's over its control socket, or one opened in this process.
func (g *globalOptions) withGovernance(ctx context.Context, f func(gov control.Governance, local bool) error) error {
	api, closeHost, err := g.openAPI(ctx)
	if err != nil {
		return err
	}
	defer closeHost()
	gov, ok := api.(control.Governance)
	if !ok {
		return fmt.Errorf("this toolhost build does not serve governance on its control socket; restart `toolhost serve`")
	}
	_, remote := api.(*control.Client)
	return f(gov, !remote)
}

func newPolicyListCmd(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "Show the rules and the effective policy of every installed tool",
		Example: "  toolhost policy list\n  toolhost policy list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withGovernance(cmd.Context(), func(gov control.Governance, _ bool) error {
				v, err := gov.Policy(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(g.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(v)
				}
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				if len(v.Rules) == 0 {
					fmt.Fprintln(g.stdout, "rules: none (set one with `toolhost policy set PATTERN allow|ask|deny`)")
				} else {
					fmt.Fprintln(tw, "PATTERN\tACTION\tSET")
					for _, r := range v.Rules {
						fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Pattern, r.Action, r.SetAt.Format("2006-01-02 15:04:05Z07:00"))
					}
					tw.Flush()
				}
				fmt.Fprintln(g.stdout)
				if len(v.Tools) == 0 {
					fmt.Fprintln(g.stdout, "no tools installed")
					return nil
				}
				fmt.Fprintln(tw, "TOOL\tPLUGIN\tPOLICY\tBECAUSE")
				for _, e := range v.Tools {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Tool, e.Plugin, e.Action, e.Source)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newPolicySetCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "set PATTERN allow|ask|deny",
		Short:   "Allow, ask about or deny calls of the tools PATTERN matches",
		Long:    "PATTERN is a tool name or a glob (* and ? wildcards). A rule for the same pattern is replaced.\n\n" + policyRule,
		Example: "  toolhost policy set 'delete_*' deny\n  toolhost policy set delete_note ask\n  toolhost policy set fetch_url allow",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := store.ValidPolicyPattern(args[0]); err != nil {
				return usageError{err}
			}
			if err := store.ValidPolicyAction(args[1]); err != nil {
				return usageError{err}
			}
			return g.withGovernance(cmd.Context(), func(gov control.Governance, _ bool) error {
				if err := gov.SetPolicy(cmd.Context(), args[0], args[1]); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "policy: %s -> %s\n", args[0], args[1])
				if v, err := gov.Policy(cmd.Context()); err == nil {
					warnCaseOnly(g, args[0], args[1], v.Tools)
				}
				return nil
			})
		},
	}
}

func newPolicyUnsetCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "unset PATTERN",
		Short:   "Remove the rule for PATTERN (its tools fall back to other rules or the default)",
		Example: "  toolhost policy unset 'delete_*'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withGovernance(cmd.Context(), func(gov control.Governance, _ bool) error {
				if err := gov.UnsetPolicy(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "policy: rule for %s removed\n", args[0])
				return nil
			})
		},
	}
}

// warnCaseOnly warns when pattern matches no installed tool but would
// match some ignoring case: rules match tool names exactly (RATIONALE.md),
// so such a rule, say "Delete_Note deny", silently applies to nothing.
func warnCaseOnly(g *globalOptions, pattern, action string, tools []govern.Effective) {
	var near []string
	for _, t := range tools {
		if plugin.MatchGlob(pattern, t.Tool) {
			return
		}
		if plugin.MatchGlob(strings.ToLower(pattern), strings.ToLower(t.Tool)) {
			near = append(near, t.Tool)
		}
	}
	if len(near) == 0 {
		return
	}
	fix := "write the pattern in the tools' own case"
	if len(near) == 1 && !strings.ContainsAny(pattern, "*?") {
		fix = fmt.Sprintf("run `toolhost policy set %s %s`", near[0], action)
	}
	fmt.Fprintf(g.stderr, "warning: the rule for %q applies to no installed tool: rules match tool names exactly, case included, and it matches %s only ignoring case; %s, and `toolhost policy unset %s`\n",
		pattern, strings.Join(near, ", "), fix, pattern)
}
