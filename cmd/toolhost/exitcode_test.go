package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/api/control"
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

// A deleted audit log is damage, like a broken one or one cut below what
// was made durable: exit 3.
func TestMissingAuditLogExitCode(t *testing.T) {
	for _, err := range []error{audit.ErrLogMissing, audit.ErrLogDamaged} {
		if got := exitCode(fmt.Errorf("%w: gone", err)); got != exitRefused {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, exitRefused)
		}
	}
}

// A key refused by the trust store (a name taken, a rename) is refused:
// exit 3.
func TestTrustConflictExitCode(t *testing.T) {
	if got := exitCode(fmt.Errorf("%w: name taken", store.ErrTrustConflict)); got != exitRefused {
		t.Errorf("exitCode(ErrTrustConflict) = %d, want %d", got, exitRefused)
	}
}

// Bad arguments found by a library's validator are usage errors (exit 2),
// checked before anything is opened; they used to exit 1 or 5.
func TestBadArgumentsExitUsage(t *testing.T) {
	for _, args := range [][]string{
		{"policy", "set", "[abc", "deny"},
		{"policy", "set", "", "deny"},
		{"policy", "set", strings.Repeat("a", 65), "deny"},
		{"plugin", "init", "Bad"},
		{"plugin", "init", "1abc"},
		{"plugin", "init", "a/b"},
		{"approvals", "approve", ""},
		{"approvals", "deny", " "},
	} {
		home := filepath.Join(t.TempDir(), "home")
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"--home", home}, args...), strings.NewReader(""), &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d; stderr %q", args, code, exitUsage, stderr.String())
		}
	}
}

// A second serve on a home another process serves finds the store in use,
// like any command that finds badger's lock held: exit 6 (it was 1).
func TestServeOnServedHomeExitsBusy(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	ctx, cancel := context.WithCancel(context.Background())
	var firstErr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--home", home, "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, &firstErr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	sock := filepath.Join(home, control.SocketName)
	deadline := time.After(60 * time.Second)
	for {
		if c, err := control.Dial(context.Background(), sock); err == nil {
			c.Close()
			break
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("the first serve ended with %d before serving: %s", code, firstErr.String())
		case <-deadline:
			t.Fatalf("the first serve does not answer on %s after 60 s", sock)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--home", home, "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitBusy {
		t.Errorf("serve on a served home: exit %d, want %d; stderr %q", code, exitBusy, stderr.String())
	}
	if !strings.Contains(stderr.String(), "already serves this home") || !strings.Contains(stderr.String(), "hint: another toolhost process") {
		t.Errorf("serve on a served home: stderr %q does not say what holds the home and what to do", stderr.String())
	}
}
