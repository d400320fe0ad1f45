package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newListCmd(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List installed plugins and their verification state",
		Example: "  toolhost plugin list\n  toolhost plugin list --json | jq .",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			plugins, err := api.Plugins(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				for i := range plugins {
					plugins[i].Manifest = nil
				}
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"plugins": plugins})
			}
			if len(plugins) == 0 {
				fmt.Fprintln(g.stdout, "no plugins installed (install one with `toolhost plugin install BUNDLE`)")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tSTATE\tTOOLS\tSIGNED BY\tDIGEST")
			for _, p := range plugins {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Version, p.State, strings.Join(p.Tools, ","), strings.Join(p.Signers, ","), p.Digest.Short())
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
