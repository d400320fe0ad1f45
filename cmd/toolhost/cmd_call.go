package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
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
			ctx := host.WithEntry(cmd.Context(), host.EntryCLI)
			if _, remote := api.(*control.Client); remote {
				ctx = govern.WithElicitor(ctx, g.approvalHint)
			}
			res, err := api.Call(ctx, args[0], input)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "%s\n", res)
			return err
		},
	}
}

// approvalHint is the Elicitor of a call made through a running host: the
// caller is not asked (an operator decides, as the policy says), but is
// told that the call waits and how it is decided, instead of waiting in
// silence until the approval timeout.
func (g *globalOptions) approvalHint(_ context.Context, p govern.Pending) (govern.Answer, error) {
	fmt.Fprintf(g.stderr, "%s waits for a person's approval (id %s): decide with `toolhost approvals approve %s` or `toolhost approvals deny %s` in another terminal; Ctrl-C gives the call up\n",
		terminalSafe(p.Tool), terminalSafe(p.ID), terminalSafe(p.ID), terminalSafe(p.ID))
	return govern.Answer{}, errors.New("the CLI's caller is not asked: an operator decides")
}
