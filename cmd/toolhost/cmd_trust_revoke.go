package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/signing"
)

func newTrustRevokeCmd(g *globalOptions) *cobra.Command {
	return newKeyStateCmd(g, &cobra.Command{
		Use:   "revoke KEYID|FILE.pub",
		Short: "Revoke a curator key: it never counts again until un-revoked",
		Long: `Revoke a curator key. Plugins that relied on its signature become
unavailable at once (with the reason "revoked signer"), in a running host too.
A revoked key does not count even if it is trusted or added again later, until
toolhost trust unrevoke is run.`,
		Example: "  toolhost trust revoke 1a2b3c4d5e6f7a8b\n  toolhost trust revoke mallory.pub",
	}, control.API.Revoke, "revoked key %s\n")
}

func newTrustUnrevokeCmd(g *globalOptions) *cobra.Command {
	return newKeyStateCmd(g, &cobra.Command{
		Use:     "unrevoke KEYID|FILE.pub",
		Short:   "Lift a key's revocation (it counts again only if it is trusted)",
		Example: "  toolhost trust unrevoke 1a2b3c4d5e6f7a8b",
	}, control.API.Unrevoke, "key %s is no longer revoked\n")
}

// newKeyStateCmd completes a command that applies change to one key, given
// by ID or by its public key file, and reports done.
func newKeyStateCmd(g *globalOptions, cmd *cobra.Command, change func(control.API, context.Context, signing.KeyID) error, done string) *cobra.Command {
	cmd.Args = cobra.ExactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := keyIDArg(args[0])
		if err != nil {
			return err
		}
		api, closeHost, err := g.openAPI(cmd.Context())
		if err != nil {
			return err
		}
		defer closeHost()
		if err := change(api, cmd.Context(), id); err != nil {
			return err
		}
		fmt.Fprintf(g.stdout, done, id)
		return nil
	}
	return cmd
}

// keyIDArgText parses a key ID typed on the command line: the form
// `trust list` shows, or the same hex digits in upper case (as some tools
// copy them); key IDs inside bundles stay lowercase only.
func keyIDArgText(arg string) (signing.KeyID, error) {
	return signing.ParseKeyID(strings.ToLower(arg))
}

// keyIDArg accepts a key ID or a public key file.
func keyIDArg(arg string) (signing.KeyID, error) {
	if id, err := keyIDArgText(arg); err == nil {
		return id, nil
	}
	if strings.HasSuffix(arg, ".pub") || fileExists(arg) {
		data, err := curator.ReadKeyFile(arg)
		if err != nil {
			return signing.KeyID{}, err
		}
		pk, err := curator.ParsePublicKey(data)
		if err != nil {
			return signing.KeyID{}, fmt.Errorf("%s: %w", arg, err)
		}
		return pk.Key.ID(), nil
	}
	return signing.KeyID{}, usagef("%q is neither a key ID (16 hex digits, see `toolhost trust list`) nor a .pub file", arg)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
