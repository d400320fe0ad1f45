package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/curator"
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
				return fmt.Errorf("%s: %w", keyPath, err)
			}
			b, err := readBundle(args[0])
			if err != nil {
				return err
			}
			var exp time.Time
			if expires > 0 {
				exp = time.Now().Add(expires)
			}
			sig := signing.Sign(key.Key, b.Digest(), exp)
			added, err := b.AddSignature(sig)
			if err != nil {
				return err
			}
			if added {
				if err := writeFileAtomic(args[0], b.Bytes()); err != nil {
					return err
				}
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

// writeFileAtomic replaces path with data via a synced temporary file.
func writeFileAtomic(path string, data []byte) error {
	info, err := os.Stat(path)
	mode := os.FileMode(0o644)
	if err == nil {
		mode = info.Mode().Perm()
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := bytes.NewReader(data).WriteTo(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
