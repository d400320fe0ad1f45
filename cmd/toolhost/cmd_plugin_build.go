package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/authoring"
	"github.com/toolhost/toolhost/plugin"
)

func newPluginBuildCmd(g *globalOptions) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "build [DIR]",
		Short: "Compile a plugin's executor, check it as install would, pack NAME.plugin",
		Long: `Compile the plugin in DIR (default .) with its language's toolchain — Go:
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; AssemblyScript: npx asc
from DIR/node_modules — to the wasm file plugin.json names. Then check the
module as install would (imports the sandbox provides, memory within the
manifest's limit, an export for every tool) and pack the unsigned bundle
DIR/NAME.plugin (or -o FILE). A missing toolchain is named, with how to
install it. Dependencies are fetched as needed: go build downloads a Go
plugin's modules, and an AssemblyScript plugin whose node_modules lacks the
compiler or the PDK gets ` + "`npm ci`" + ` (with a package-lock.json) or ` + "`npm install`" + `
first; both need the network the first time.`,
		Example: "  toolhost plugin build\n  toolhost plugin build ./hello -o hello-0.1.0.plugin",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			res, err := authoring.Build(cmd.Context(), dir, out)
			if errors.Is(err, plugin.ErrOutputIsSource) {
				return usageError{err}
			}
			if err != nil {
				return sourceError{err}
			}
			printBuild(g, res)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "bundle file to write (default DIR/NAME.plugin)")
	return cmd
}

func printBuild(g *globalOptions, res authoring.BuildResult) {
	m := res.Bundle.Manifest()
	tools := make([]string, len(m.Tools))
	for i, t := range m.Tools {
		tools[i] = t.Name
	}
	if res.Installed != "" {
		fmt.Fprintf(g.stdout, "installed dependencies first: %s\n", res.Installed)
	}
	fmt.Fprintf(g.stdout, "built %s %s (%s, wasm %d bytes, %s) in %s -> %s\n  tools: %s\n  digest: %s\n",
		m.Name, m.Version, res.Lang, len(res.Bundle.Wasm), plural(len(m.Tools), "tool"),
		res.Duration.Round(time.Millisecond), res.Output, strings.Join(tools, ", "), res.Bundle.Digest())
	warnSchemas(g, m)
}
