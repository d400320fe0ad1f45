package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/authoring"
)

func newPluginInitCmd(g *globalOptions) *cobra.Command {
	var lang, dir string
	cmd := &cobra.Command{
		Use:   "init NAME [--lang go|assemblyscript] [--dir DIR]",
		Short: "Start a new plugin from a template: manifest, executor, test, README",
		Long: `Write a plugin directory (default ./NAME) that builds and passes its own
test out of the box: plugin.json with one example tool (greet), its executor on
the official Extism PDK (Go: github.com/extism/go-pdk v1.1.3; AssemblyScript:
@extism/as-pdk from npm), a unit test and a README with the next commands.
The templates are part of the toolhost binary. DIR must not exist or be empty.`,
		Example: "  toolhost plugin init hello\n  toolhost plugin init hello --lang assemblyscript --dir ./plugins/hello",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := authoring.ValidInit(name, lang); err != nil {
				return usageError{err}
			}
			if dir == "" {
				dir = name
			}
			files, err := authoring.Init(dir, name, lang)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "created %s plugin %s in %s:\n", lang, name, dir)
			for _, f := range files {
				fmt.Fprintf(g.stdout, "  %s\n", filepath.Join(dir, f))
			}
			fmt.Fprintf(g.stdout, "next:\n  cd %s\n", shellWord(dir))
			if lang == authoring.LangAssemblyScript {
				fmt.Fprintln(g.stdout, "  npm install                 # the AssemblyScript compiler and @extism/as-pdk (plugin build runs it when they are missing)")
			}
			fmt.Fprintln(g.stdout, "  toolhost plugin build       # compile, check, pack "+name+".plugin")
			fmt.Fprintln(g.stdout, "  toolhost plugin dev         # serve it unsigned in a throwaway home; edits reload")
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", authoring.LangGo, "language of the executor: go or assemblyscript")
	cmd.Flags().StringVar(&dir, "dir", "", "directory to create (default ./NAME)")
	return cmd
}

// shellWord quotes s for a POSIX shell when it holds anything but
// characters every shell reads as one word: a line meant to be pasted
// (`cd a dir/hello`) must not split at a space.
func shellWord(s string) string {
	plain := s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+,:@%", r))
	})
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
