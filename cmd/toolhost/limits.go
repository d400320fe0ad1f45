package main

import (
	"fmt"
	"time"

	"github.com/toolhost/toolhost/host/engine/worker"
	"github.com/toolhost/toolhost/host/govern"
)

// Bounds of the limit flags. A value outside them is a usage error (exit
// 2) that names the flag, the value and the range: a zero or negative
// limit used to become the default without a word, and an unbounded
// --workers started that many processes one after another.
const (
	// maxWorkers caps --workers: the pool's own bound (see there why).
	maxWorkers = worker.MaxPoolWorkers
	// maxInFlightLimit caps --max-in-flight and --max-in-flight-per-plugin:
	// every admitted call holds a worker or waits for one.
	maxInFlightLimit = 4096
	// maxQueuedLimit caps --max-queued: a waiting call holds its request
	// and arguments in memory.
	maxQueuedLimit = 65536
	// maxApprovalTimeout caps --approval-timeout: a call waiting for a
	// person holds its caller's connection and a pending entry (not an
	// admission slot).
	maxApprovalTimeout = 24 * time.Hour
	// minSandboxMemory and maxSandboxMemory bound --sandbox-memory (MiB):
	// below 64 MiB the idle workers alone pass it, and every call that
	// runs 10 ms would be stopped.
	minSandboxMemory = 64
	maxSandboxMemory = 1 << 20
)

var (
	workersUsage         = fmt.Sprintf("sandbox worker processes, 1 to %d (default 0: twice the CPUs, at least 3); one plugin uses at most all but one", maxWorkers)
	maxInFlightUsage     = fmt.Sprintf("tool calls admitted at once, over every entry point, 1 to %d; more wait in a queue", maxInFlightLimit)
	maxPerPluginUsage    = fmt.Sprintf("calls of one plugin admitted at once, 1 to %d", maxInFlightLimit)
	maxQueuedUsage       = fmt.Sprintf("calls waiting for admission before answering busy, 1 to %d", maxQueuedLimit)
	sandboxMemoryUsage   = fmt.Sprintf("resident memory, in MiB, that all sandbox workers may hold together, %d to %d (default 0: %d); past it the call in the largest worker ends with memory_limit", minSandboxMemory, maxSandboxMemory, worker.DefaultMemoryBudget>>20)
	approvalTimeoutUsage = fmt.Sprintf("how long a call whose policy is ask waits for a person before it is denied (above 0, up to %s)", fmtDuration(maxApprovalTimeout))
)

// validateWorkers checks --workers (0 picks the default).
func validateWorkers(n int) error {
	if n < 0 || n > maxWorkers {
		return usagef("--workers %d is out of range: use 1 to %d worker processes, or 0 for the default (twice the CPUs, at least 3)", n, maxWorkers)
	}
	return nil
}

// validateServeLimits checks serve's limit flags, before anything starts.
func (g *globalOptions) validateServeLimits() error {
	if err := validateWorkers(g.workers); err != nil {
		return err
	}
	if m := g.sandboxMemoryMiB; m != 0 && (m < minSandboxMemory || m > maxSandboxMemory) {
		return usagef("--sandbox-memory %d is out of range: use %d to %d MiB, or 0 for the default (%d MiB)", m, minSandboxMemory, maxSandboxMemory, worker.DefaultMemoryBudget>>20)
	}
	for _, l := range []struct {
		flag   string
		n, max int
	}{
		{"--max-in-flight", g.admission.maxInFlight, maxInFlightLimit},
		{"--max-in-flight-per-plugin", g.admission.maxPerPlugin, maxInFlightLimit},
		{"--max-queued", g.admission.maxQueued, maxQueuedLimit},
	} {
		if l.n < 1 || l.n > l.max {
			return usagef("%s %d is out of range: use 1 to %d", l.flag, l.n, l.max)
		}
	}
	if t := g.approvalTimeout; t <= 0 || t > maxApprovalTimeout {
		return usagef("--approval-timeout %s is out of range: use a duration above 0 and up to %s, such as %s (the default)", t, fmtDuration(maxApprovalTimeout), fmtDuration(govern.DefaultApprovalTimeout))
	}
	return nil
}

// fmtDuration prints whole hours and minutes without the zero units
// time.Duration.String adds ("24h", not "24h0m0s").
func fmtDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
