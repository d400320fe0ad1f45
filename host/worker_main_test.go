package host_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/toolhost/toolhost/host/engine/worker"
)

// workerCache is the compilation cache every sandbox worker of this test
// binary shares: the Extism kernel and the corpus compile once per run.
var workerCache string

// TestMain doubles as the sandbox worker: the pools under test re-execute
// this binary with "sandbox-worker --cache DIR", as the CLI re-executes
// toolhost.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-worker" {
		cache := ""
		for i, a := range os.Args {
			if a == "--cache" && i+1 < len(os.Args) {
				cache = os.Args[i+1]
			}
		}
		os.Exit(worker.Main(cache))
	}
	dir, err := os.MkdirTemp("", "toolhost-host-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
