package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
)

func newInstallCmd(g *globalOptions) *cobra.Command {
	var opts host.InstallOptions
	cmd := &cobra.Command{
		Use:   "install BUNDLE",
		Short: "Verify a signed bundle and install it into the store",
		Long: `Verify the bundle against the trust store, refuse versions older than the
highest ever installed under its name, check that the wasm module compiles and
exports every tool, and store it durably. Its tools are callable afterwards.`,
		Example: "  toolhost plugin install time.plugin",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := readBundle(args[0])
			if err != nil {
				return err
			}
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			rep, err := api.Install(cmd.Context(), b, opts)
			if err != nil {
				return err
			}
			signers := "unsigned (dev mode)"
			if len(rep.Decision.Signers) > 0 {
				signers = fmt.Sprint(rep.Decision.Signers)
			}
			switch {
			case rep.Unchanged:
				fmt.Fprintf(g.stdout, "%s %s is already installed (digest %s)\n", rep.Name, rep.Version, rep.Digest.Short())
			case rep.Previous != nil:
				fmt.Fprintf(g.stdout, "upgraded %s %s -> %s (digest %s, signed by %s)\n", rep.Name, rep.Previous.Version, rep.Version, rep.Digest.Short(), signers)
			default:
				fmt.Fprintf(g.stdout, "installed %s %s (digest %s, signed by %s)\n", rep.Name, rep.Version, rep.Digest.Short(), signers)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.AllowDowngrade, "allow-downgrade", false, "install even if a higher version was installed before")
	return cmd
}
