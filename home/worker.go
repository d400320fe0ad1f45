package home

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/worker"
)

// WorkerCommand is the first argument of a sandbox worker process; the
// toolhost CLI's hidden command of that name runs worker.Run.
const WorkerCommand = "sandbox-worker"

// newEngine starts the sandbox: supervised worker processes running
// opts.WorkerExecutable, sharing the home's compilation cache.
func newEngine(ctx context.Context, dir string, opts Options, log *slog.Logger) (engine.Engine, error) {
	cache := filepath.Join(dir, "cache", "wazero")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, err
	}
	p, err := worker.NewPool(ctx, worker.Options{
		Command:           []string{opts.WorkerExecutable, WorkerCommand, "--cache", cache},
		Workers:           opts.Workers,
		MemoryBudgetBytes: opts.MemoryBudgetBytes,
		Logger:            log,
	})
	if err != nil {
		return nil, fmt.Errorf("%w (the sandbox workers run %s %s: it must be the toolhost executable, or a program whose main calls home.RunWorker first)", err, opts.WorkerExecutable, WorkerCommand)
	}
	return p, nil
}

// RunWorker makes this process a sandbox worker when it was started as
// one (os.Args[1] is WorkerCommand), and then returns the exit code and
// true; otherwise it returns false at once. A program that opens a home
// with its own executable as Options.WorkerExecutable calls it first in
// main:
//
//	if code, ok := home.RunWorker(); ok {
//		os.Exit(code)
//	}
//
// A worker serves the host over its stdin and stdout and runs nothing of
// the program's own.
func RunWorker() (code int, ok bool) {
	if len(os.Args) < 2 || os.Args[1] != WorkerCommand {
		return 0, false
	}
	cache := ""
	for i, a := range os.Args[2:] {
		if a == "--cache" && i+3 < len(os.Args) {
			cache = os.Args[i+3]
		}
	}
	return worker.Main(cache), true
}
