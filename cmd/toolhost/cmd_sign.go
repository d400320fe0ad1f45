package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/internal/userfile"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
)

func newSignCmd(g *globalOptions) *cobra.Command {
	var keyPath string
	var expires time.Duration
	cmd := &cobra.Command{
		Use:   "sign --key FILE BUNDLE",
		Short: "Add your signature to a plugin bundle (in place)",
		Long: `Sign the bundle's digest (exact manifest bytes + wasm sha256) with a curator
key and add the signature to the bundle. Nothing else in the bundle changes.
Review the plugin first: toolhost plugin inspect / the manifest in full.`,
		Example: "  toolhost curator sign --key alice.key build/plugins/time.plugin\n  toolhost curator sign --key alice.key --expires 720h time.plugin",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyPath == "" {
				return usagef("--key is required: the curator's private key file (NAME.key)")
			}
			if expires < 0 {
				return usagef("--expires must be positive")
			}
			// Read the bundle first: one that is not a bundle (or whose
			// module is not WebAssembly) is refused before the passphrase
			// is asked for.
			if _, err := readBundle(args[0]); err != nil {
				return err
			}
			keyData, err := curator.ReadPrivateKeyFile(keyPath)
			if err != nil {
				return err
			}
			var pass []byte
			if curator.IsEncrypted(keyData) {
				if pass, err = readPassphrase("Passphrase for "+keyPath+": ", false); err != nil {
					return err
				}
			}
			key, err := curator.ParsePrivateKey(keyData, pass)
			if err != nil {
				if pass != nil {
					return fmt.Errorf("%s: %w%s", keyPath, err, passphraseHint())
				}
				return fmt.Errorf("%s: %w", keyPath, err)
			}
			// Read again, sign and write under the bundle's lock: two
			// curators signing one file at once both keep their
			// signature. A symlinked bundle's target is signed.
			var b *plugin.Bundle
			var sig signing.Signature
			var added bool
			err = userfile.Update(cmd.Context(), args[0], plugin.MaxBundleBytes, func(old []byte) ([]byte, error) {
				var err error
				if b, err = plugin.DecodeBytes(old); err != nil {
					return nil, fmt.Errorf("%s: %w", args[0], err)
				}
				var exp time.Time
				if expires > 0 {
					exp = time.Now().Add(expires)
				}
				sig = signing.Sign(key.Key, b.Digest(), exp)
				if added, err = b.AddSignature(sig); err != nil || !added {
					return nil, err
				}
				return b.Bytes(), nil
			})
			if err != nil {
				return bundlePathError(err)
			}
			m := b.Manifest()
			fmt.Fprintf(g.stdout, "signed %s %s\ndigest:  %s\nkey ID:  %s (%s)\n", m.Name, m.Version, b.Digest(), sig.KeyID, key.Name)
			if !sig.Expires.IsZero() {
				fmt.Fprintf(g.stdout, "expires: %s\n", sig.Expires.Format(time.RFC3339))
			}
			if !added {
				fmt.Fprintln(g.stdout, "(this exact signature was already present; the bundle is unchanged)")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "curator private key file (NAME.key)")
	cmd.Flags().DurationVar(&expires, "expires", 0, "signature lifetime, e.g. 720h (default: never expires)")
	return cmd
}
