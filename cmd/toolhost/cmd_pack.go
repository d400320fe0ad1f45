package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/userfile"
	"github.com/toolhost/toolhost/plugin"
)

func newPackCmd(g *globalOptions) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "pack DIR -o FILE",
		Short: "Pack a plugin directory (plugin.json + wasm) into one unsigned bundle",
		Long: `Validate DIR/plugin.json strictly (unknown, duplicate or case-variant keys
are errors; names, versions and every tool's JSON Schema are checked) and write
a deterministic bundle holding the manifest and the wasm named by it.`,
		Example: "  toolhost plugin pack build/plugins/time -o time.plugin   # after make plugins, in the toolhost repo",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("-o FILE is required")
			}
			b, err := plugin.PackDir(args[0])
			if err != nil {
				return sourceError{err}
			}
			if err := plugin.CheckPackOutput(args[0], b.Manifest(), out); err != nil {
				return usageError{err}
			}
			if err := userfile.Replace(out, b.Bytes()); err != nil {
				return outputPathError(err)
			}
			m := b.Manifest()
			fmt.Fprintf(g.stdout, "packed %s %s (%s, wasm %d bytes) -> %s\ndigest: %s\n", m.Name, m.Version, plural(len(m.Tools), "tool"), len(b.Wasm), out, b.Digest())
			warnSchemas(g, m)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "bundle file to write")
	return cmd
}

// outputPathError says what to give instead of an -o path that is not a
// file toolhost can replace.
func outputPathError(err error) error {
	if errors.As(err, new(*userfile.NotRegularError)) {
		return fmt.Errorf("%w: give -o the path of the bundle file to write", err)
	}
	return err
}

// warnSchemas tells a plugin's author about a tool no call can pass (its
// schema requires a property it also forbids), and about a schema one
// provider's API refuses (a top-level anyOf, oneOf or allOf): valid JSON
// Schema, so not refused, but surely not what was meant.
func warnSchemas(g *globalOptions, m *plugin.Manifest) {
	for _, t := range m.Tools {
		for _, u := range plugin.UnsatisfiableRequired(t.Parameters) {
			fmt.Fprintf(g.stderr, "warning: tool %s: no call can pass its parameter schema: %s; define the property or leave it out of required\n", terminalSafe(t.Name), terminalSafe(u))
		}
		for _, k := range plugin.RootCombinators(t.Parameters) {
			fmt.Fprintf(g.stderr, "warning: tool %s: %s\n", terminalSafe(t.Name), rootCombinatorNote(k))
		}
	}
}

// rootCombinatorNote says what a top-level combinator k in a tool's
// parameters does to an Anthropic client, and what to do instead.
func rootCombinatorNote(k string) string {
	return fmt.Sprintf("its parameters have %s at the top level, which Anthropic's Messages API refuses (a request that lists the tool from ?format=anthropic fails as a whole); put the alternatives inside a property, or check them in the tool", k)
}
