package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/api/control"
)

func newApprovalsCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "Calls waiting for a person: list, approve, deny",
		Long: `Calls of tools whose policy is "ask" wait in the running toolhost (serve, or
mcp when it holds the store) until a person decides or --approval-timeout
passes. A declined or timed-out call fails with "denied".`,
	}
	cmd.AddCommand(newApprovalsListCmd(g), newApprovalsDecideCmd(g, true), newApprovalsDecideCmd(g, false))
	return cmd
}

func newApprovalsListCmd(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List pending calls: ID, tool, arguments, entry point, age",
		Example: "  toolhost approvals list\n  toolhost approvals list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withGovernance(cmd.Context(), func(gov control.Governance, local bool) error {
				ps, err := gov.Approvals(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(g.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(ps)
				}
				if len(ps) == 0 {
					msg := "no calls are waiting for approval"
					if local {
						msg += " (no toolhost is serving this home: calls wait only in a running `toolhost serve`)"
					}
					fmt.Fprintln(g.stdout, msg)
					return nil
				}
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTOOL\tPLUGIN\tENTRY\tAGE\tARGUMENTS")
				for _, p := range ps {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Tool, p.Plugin, p.Entry, time.Since(p.Since).Round(time.Second), terminalSafe(oneLine(string(p.Arguments))))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newApprovalsDecideCmd(g *globalOptions, approve bool) *cobra.Command {
	var reason string
	use, short, example := "approve ID", "Let a waiting call run", "  toolhost approvals approve 3f2a9c0d1e4b5a68"
	if !approve {
		use, short, example = "deny ID", "Refuse a waiting call (it fails with denied)", "  toolhost approvals deny 3f2a9c0d1e4b5a68 --reason 'not on a Friday'"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Example: example,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(args[0]) == "" {
				return usagef("the approval ID is empty: give the ID of a waiting call, as `toolhost approvals list` shows it")
			}
			return g.withGovernance(cmd.Context(), func(gov control.Governance, _ bool) error {
				if err := gov.Decide(cmd.Context(), args[0], approve, reason); err != nil {
					return err
				}
				verb := "approved"
				if !approve {
					verb = "denied"
				}
				fmt.Fprintf(g.stdout, "%s %s\n", verb, args[0])
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (the caller and the audit log see it)")
	return cmd
}
