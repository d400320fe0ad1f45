package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/curator"
)

func newTrustPolicyCmd(g *globalOptions) *cobra.Command {
	var threshold int
	var force bool
	cmd := &cobra.Command{
		Use:   "policy [--threshold N]",
		Short: "Show or set the trust policy (how many curators must sign)",
		Long: `With --threshold N, require N distinct trusted, unrevoked curator keys to
have signed a plugin (the same key signing twice counts once). Plugins that
fall below take effect at once: they become unavailable, in a running host too.
Raising it above the number of trusted, unrevoked keys would make every
plugin unavailable at once: that is refused unless --force is given.`,
		Example: "  toolhost trust policy\n  toolhost trust policy --threshold 2\n  toolhost trust policy --threshold 3 --force   # before the third curator's key is added",
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
				ts, err := api.TrustSet(cmd.Context())
				if err != nil {
					return err
				}
				// Lowering it never makes a plugin unavailable.
				if usable := usableKeys(ts); threshold > usable && threshold > max(ts.Threshold, 1) && !force {
					return usagef("--threshold %d would make every plugin unavailable: there are only %s (see `toolhost trust list`); trust more curator keys first, or pass --force to set it anyway",
						threshold, plural(usable, "trusted, unrevoked curator key"))
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
	cmd.Flags().BoolVar(&force, "force", false, "set a threshold above the number of trusted, unrevoked keys (every plugin becomes unavailable)")
	cmd.Flags().IntVar(&threshold, "threshold", 1, "number of distinct trusted curators that must have signed")
	return cmd
}

// usableKeys counts the keys that can meet a threshold: trusted and not
// revoked.
func usableKeys(ts curator.TrustSet) int {
	n := 0
	for id := range ts.Keys {
		if _, revoked := ts.Revoked[id]; !revoked {
			n++
		}
	}
	return n
}
