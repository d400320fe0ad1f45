package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRemoveCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "remove NAME",
		Short:   "Uninstall a plugin (its rollback high-water mark is kept)",
		Example: "  toolhost plugin remove time",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			if err := api.Remove(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "removed %s\n", args[0])
			return nil
		},
	}
}
