package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/curator"
)

func newKeygenCmd(g *globalOptions) *cobra.Command {
	var out string
	var noPassphrase bool
	cmd := &cobra.Command{
		Use:   "keygen NAME",
		Short: "Create a curator signing key: NAME.key (private, 0600) and NAME.pub",
		Long: `Create an ed25519 curator key pair. The private key is encrypted with a
passphrase (from the terminal, or TOOLHOST_PASSPHRASE) unless --no-passphrase
is given. Give NAME.pub to operators who should trust your signatures.`,
		Example: "  toolhost curator keygen alice --out ~/keys\n  TOOLHOST_PASSPHRASE=... toolhost curator keygen ci-curator\n  toolhost curator keygen demo --no-passphrase",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := curator.ValidName(name); err != nil {
				return usageError{err}
			}
			var pass []byte
			if !noPassphrase {
				p, err := readPassphrase("Passphrase for the new key: ", true)
				if err != nil {
					return err
				}
				pass = p
			}
			if err := os.MkdirAll(out, 0o700); err != nil {
				return err
			}
			pubPath, keyPath, pub, err := curator.WriteKeyPair(out, name, pass)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "key ID:      %s\nprivate key: %s\npublic key:  %s\n", pub.ID(), keyPath, pubPath)
			if noPassphrase {
				fmt.Fprintln(g.stderr, "warning: the private key is not encrypted; keep it somewhere only you can read")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", ".", "directory to write the key files to")
	cmd.Flags().BoolVar(&noPassphrase, "no-passphrase", false, "do not encrypt the private key (for throwaway and CI keys)")
	return cmd
}
