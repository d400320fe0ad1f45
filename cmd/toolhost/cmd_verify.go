package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host"
)

func newVerifyCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "verify BUNDLE",
		Short: "Check a bundle's signatures against the trust store",
		Long: `Decode the bundle strictly, then show each signature (key ID, curator,
trusted/untrusted/revoked/expired/invalid) and the trust policy's decision.
Exits 3 when the policy would refuse the plugin.`,
		Example: "  toolhost plugin verify time.plugin",
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
			d, err := api.Evaluate(cmd.Context(), b)
			if err != nil {
				return err
			}
			m := b.Manifest()
			fmt.Fprintf(g.stdout, "plugin:  %s %s\ndigest:  %s\n", m.Name, m.Version, b.Digest())
			printSignatures(g.stdout, d)
			if !d.Allowed() {
				return fmt.Errorf("%w: %w", host.ErrNotAllowed, d.Err)
			}
			fmt.Fprintf(g.stdout, "policy:  OK (%d of %d required trusted curators signed)\n", len(d.Signers), d.Threshold)
			return nil
		},
	}
}

func printSignatures(w io.Writer, d curator.Decision) {
	if len(d.Signatures) == 0 {
		fmt.Fprintln(w, "signatures: none")
	}
	for i, s := range d.Signatures {
		name := s.Curator
		if name == "" {
			name = "(unknown curator)"
		}
		exp := ""
		if !s.Expires.IsZero() {
			exp = ", expires " + s.Expires.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "signature %d: key %s %s: %s%s\n", i+1, s.KeyID, name, s.State, exp)
	}
}
