package main

import (
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/engine/worker"
)

// newWorkerCmd is the hidden entry point of sandbox worker processes,
// started and supervised by the host (see package host/engine/worker).
func newWorkerCmd(g *globalOptions) *cobra.Command {
	var cache string
	cmd := &cobra.Command{
		Use:    "sandbox-worker --cache DIR",
		Short:  "Internal: run plugin calls for a supervising host over stdin/stdout",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return worker.Run(cmd.Context(), cache)
		},
	}
	cmd.Flags().StringVar(&cache, "cache", "", "compilation cache directory")
	return cmd
}
