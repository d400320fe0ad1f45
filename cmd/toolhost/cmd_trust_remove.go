package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTrustRemoveCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "remove KEYID",
		Short: "Stop trusting a curator key",
		Long: `Remove a key from the trust store. Plugins that needed its signature become
unavailable at once. To make sure a compromised key never counts again, even
if someone adds it back, use toolhost trust revoke.`,
		Example: "  toolhost trust remove 1a2b3c4d5e6f7a8b",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := keyIDArgText(args[0])
			if err != nil {
				return usageError{err}
			}
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			if err := api.RemoveTrustedKey(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "removed key %s from the trust store\n", id)
			return nil
		},
	}
}
