package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
)

func newCallCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "call TOOL [ARGS_JSON | -]",
		Short: "Call a tool; the result JSON goes to stdout",
		Long: `Validate ARGS_JSON (a JSON object; "-" reads it from stdin; default {})
against the tool's schema and run the tool in its sandbox. The result is
printed as JSON on stdout. On failure the error code and message go to stderr
and the exit code is 4 (tool failed or arguments invalid) or 5 (no such tool).`,
		Example: "  toolhost call get_current_time '{\"timezone\":\"Europe/Paris\"}'\n  echo '{}' | toolhost call get_current_time -",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			input := []byte("{}")
			if len(args) == 2 {
				input = []byte(args[1])
				if args[1] == "-" {
					data, err := io.ReadAll(io.LimitReader(g.stdin, 8<<20))
					if err != nil {
						return err
					}
					input = data
				}
			}
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			// Ctrl-C cancels cmd.Context(); through the control socket
			// that cancels the call in the running host too.
			res, err := api.Call(host.WithEntry(cmd.Context(), host.EntryCLI), args[0], input)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "%s\n", res)
			return err
		},
	}
}
