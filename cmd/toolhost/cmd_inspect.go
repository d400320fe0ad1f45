package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/plugin"
)

func newInspectCmd(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "inspect NAME",
		Short:   "Show an installed plugin: manifest, signatures, limits, permissions",
		Example: "  toolhost plugin inspect time\n  toolhost plugin inspect time --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			p, err := api.Plugin(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(p)
			}
			fmt.Fprintf(g.stdout, "name:        %s\nversion:     %s\nstate:       %s\n", p.Name, p.Version, p.State)
			if p.Reason != "" {
				fmt.Fprintf(g.stdout, "reason:      %s\n", terminalSafe(p.Reason))
			}
			fmt.Fprintf(g.stdout, "digest:      %s\ninstalled:   %s\nsigned by:   %s\n", p.Digest, p.InstalledAt.Format("2006-01-02 15:04:05Z07:00"), strings.Join(p.Signers, ", "))
			fmt.Fprintf(g.stdout, "limits:      memory %d pages, timeout %d ms, output %d bytes\n", p.Limits.MemoryPages, p.Limits.TimeoutMS, p.Limits.MaxOutputBytes)
			fmt.Fprintf(g.stdout, "hosts:       %s\n", terminalSafe(orNone(strings.Join(p.Permissions.AllowedHosts, ", "))))
			var paths []string
			for hp, gp := range p.Permissions.AllowedPaths {
				paths = append(paths, hp+" -> "+gp+" (read-only)")
			}
			fmt.Fprintf(g.stdout, "paths:       %s\n", terminalSafe(orNone(strings.Join(paths, ", "))))
			if m, err := plugin.ParseManifest(p.Manifest); err == nil {
				fmt.Fprint(g.stdout, strings.TrimPrefix(hooksText(m), "\n"))
				fmt.Fprint(g.stdout, settingsText(m))
				for i := range m.Tools {
					if s := toolGovernance(&m.Tools[i]); s != "" {
						fmt.Fprintf(g.stdout, "tool %s:\n%s", m.Tools[i].Name, s)
					}
				}
			}
			fmt.Fprintf(g.stdout, "manifest (exact signed bytes; control and format characters escaped):\n%s\n", terminalSafeLines(strings.TrimRight(string(p.Manifest), "\n")))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
