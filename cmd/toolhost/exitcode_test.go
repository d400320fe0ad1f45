package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/store"
)

// An interrupted command exits with exitInterrupted, not as a refusal.
func TestInterruptedExitCode(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("%w: installing text 1.0.0 stopped (%w)", host.ErrInterrupted, context.Canceled),
		fmt.Errorf("reading: %w", context.Canceled),
	} {
		if got := exitCode(err); got != exitInterrupted {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, exitInterrupted)
		}
	}
}

// A deleted audit log is damage, like a broken one: exit 3.
func TestMissingAuditLogExitCode(t *testing.T) {
	if got := exitCode(fmt.Errorf("%w: gone", audit.ErrLogMissing)); got != exitRefused {
		t.Errorf("exitCode(ErrLogMissing) = %d, want %d", got, exitRefused)
	}
}

// A key refused by the trust store (a name taken, a rename) is refused:
// exit 3.
func TestTrustConflictExitCode(t *testing.T) {
	if got := exitCode(fmt.Errorf("%w: name taken", store.ErrTrustConflict)); got != exitRefused {
		t.Errorf("exitCode(ErrTrustConflict) = %d, want %d", got, exitRefused)
	}
}
