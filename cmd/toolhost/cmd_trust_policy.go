package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTrustPolicyCmd(g *globalOptions) *cobra.Command {
	var threshold int
	cmd := &cobra.Command{
		Use:   "policy [--threshold N]",
		Short: "Show or set the trust policy (how many curators must sign)",
		Long: `With --threshold N, require N distinct trusted, unrevoked curator keys to
have signed a plugin (the same key signing twice counts once). Plugins that
fall below take effect at once: they become unavailable, in a running host too.`,
		Example: "  toolhost trust policy\n  toolhost trust policy --threshold 2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			if cmd.Flags().Changed("threshold") {
				if threshold < 1 || threshold > 16 {
					return usagef("--threshold must be between 1 and 16")
				}
				if err := api.SetThreshold(cmd.Context(), threshold); err != nil {
					return err
				}
			}
			ts, err := api.TrustSet(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "threshold: %d distinct trusted curator signature(s) required\n", max(ts.Threshold, 1))
			return nil
		},
	}
	cmd.Flags().IntVar(&threshold, "threshold", 1, "number of distinct trusted curators that must have signed")
	return cmd
}
