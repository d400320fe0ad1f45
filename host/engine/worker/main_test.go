package worker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// workerCache is the compilation cache every sandbox worker of this test
// binary shares.
var workerCache string

// TestMain doubles as the sandbox worker: the pools under test re-execute
// this binary with "sandbox-worker --cache DIR", as the CLI re-executes
// toolhost.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "sandbox-worker" {
		os.Exit(Main(os.Args[2]))
	}
	if len(os.Args) > 2 && os.Args[1] == "lying-worker" {
		os.Exit(lyingWorker(os.Args[2]))
	}
	if len(os.Args) > 2 && os.Args[1] == "stuck-worker" {
		os.Exit(stuckWorker(os.Args[2]))
	}
	if len(os.Args) > 1 && os.Args[1] == "linger" {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "toolhost-worker-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// newTestPool starts a pool of real worker processes (this test binary).
func newTestPool(t testing.TB, opts Options) *Pool {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts.Command = []string{exe, "sandbox-worker", workerCache}
	p, err := NewPool(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}
