// Command toolhost is the sandboxed, signed plugin host for AI-agent tools.
// See `toolhost --help` and README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	longRunning = func() {
		ignoreBrokenPipe()
		limitHostMemory(os.LookupEnv)
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// ignoreBrokenPipe makes a write to a closed stdout or stderr an EPIPE
// error instead of a SIGPIPE that kills the process: an MCP client that
// vanishes, or a log reader that stops, must not take the host down with
// its store open and its control socket left behind. Only the long-running
// commands (serve, mcp) call it; the others die quietly as a Unix filter
// does (`toolhost audit list | head`).
func ignoreBrokenPipe() { signal.Ignore(syscall.SIGPIPE) }
