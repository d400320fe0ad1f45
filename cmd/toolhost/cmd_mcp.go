package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/api/mcpserver"
)

func newMCPCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the tools over MCP on stdin/stdout (for MCP clients to spawn)",
		Long: `Speak the Model Context Protocol on stdin/stdout. If toolhost serve runs for
this home, the tools and calls are the running host's; otherwise this process
opens the store itself, with the same sandbox worker pool as serve (and serves
the other CLI commands while it runs). Logs go to stderr.`,
		Example: `  toolhost mcp
  # MCP client configuration:
  {"mcpServers": {"toolhost": {"command": "toolhost", "args": ["mcp"], "env": {"TOOLHOST_HOME": "/home/me/.toolhost"}}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateWorkers(g.workers); err != nil {
				return err
			}
			longRunning()
			ctx := cmd.Context()
			g.logger = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var backend mcpserver.Backend
			if c, err := control.Dial(ctx, filepath.Join(g.home, control.SocketName)); err == nil {
				defer c.Close()
				bctx, cancel := context.WithCancel(ctx)
				defer cancel()
				backend = control.NewBackend(bctx, c, g.logger)
			} else {
				g.useServerWorkers()
				hm, err := g.openHome(ctx, true)
				if err != nil {
					return err
				}
				defer hm.Close()
				backend = hm.Host()
			}
			srv := mcpserver.New(backend, version, mcpserver.WithLogger(g.logger))
			defer srv.Close()
			if err := srv.Run(ctx, stdinCloser{g}, stdoutCloser{g}); err != nil && ctx.Err() == nil {
				return fmt.Errorf("mcp: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&g.workers, "workers", 0, workersUsage+" (only without a running serve)")
	return cmd
}

// stdinCloser and stdoutCloser give the MCP transport the command's own
// streams; closing them is a no-op (the process owns the real ones).
type stdinCloser struct{ g *globalOptions }

func (s stdinCloser) Read(p []byte) (int, error) { return s.g.stdin.Read(p) }
func (stdinCloser) Close() error                 { return nil }

type stdoutCloser struct{ g *globalOptions }

func (s stdoutCloser) Write(p []byte) (int, error) { return s.g.stdout.Write(p) }
func (stdoutCloser) Close() error                  { return nil }
