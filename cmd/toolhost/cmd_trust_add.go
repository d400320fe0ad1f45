package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/curator"
)

func newTrustAddCmd(g *globalOptions) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "add FILE.pub",
		Short: "Trust a curator's public key",
		Long: `Add a curator public key (NAME.pub from toolhost curator keygen) to the trust
store. Plugins signed by it become installable and loadable; a running host
picks the change up at once.

A name is one key's (ignoring case): a name another trusted or revoked key
holds is refused (exit 3); pick another with --name. Adding a key that is
already trusted under its name changes nothing; under another name it is
refused: to rename a key, trust remove it and add it again with --name.`,
		Example: "  toolhost trust add alice.pub\n  toolhost trust add alice.pub --name alice@example.com",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := curator.ReadKeyFile(args[0])
			if err != nil {
				return err
			}
			pk, err := curator.ParsePublicKey(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if name != "" {
				if err := curator.ValidName(name); err != nil {
					return usageError{err}
				}
				pk.Name = name
			}
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			if err := api.AddTrustedKey(cmd.Context(), pk.Name, pk.Key); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "trusted %s (key %s)\n", pk.Name, pk.Key.ID())
			if ts, err := api.TrustSet(cmd.Context()); err == nil && !ts.Revoked[pk.Key.ID()].IsZero() {
				fmt.Fprintln(g.stderr, "warning: this key is revoked and will not count until `toolhost trust unrevoke` is run")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name to show for this curator (default: the name in the file)")
	return cmd
}
