package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// serve and mcp run under a soft memory limit, unless the operator chose
// one with GOMEMLIMIT.
func TestLimitHostMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	debug.SetMemoryLimit(math.MaxInt64)
	limitHostMemory(func(string) (string, bool) { return "", false })
	if got := debug.SetMemoryLimit(-1); got != hostMemoryLimit {
		t.Fatalf("without GOMEMLIMIT the limit is %d, want %d", got, hostMemoryLimit)
	}

	debug.SetMemoryLimit(1 << 30) // as GOMEMLIMIT=1GiB would have set it
	limitHostMemory(func(k string) (string, bool) { return "1GiB", k == "GOMEMLIMIT" })
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Fatalf("with GOMEMLIMIT the limit became %d, want the operator's %d", got, 1<<30)
	}
}
