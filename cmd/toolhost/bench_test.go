package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// TestBenchInterruptedExits130: Ctrl-C (the command's context ending)
// during a bench prints what was measured and exits 130, as the exit code
// table says of an interrupted command; it exited 0, so a script took a
// cut-short run for the one it asked for. Interrupted before the first
// call finished, it exits 130 too.
func TestBenchInterruptedExits130(t *testing.T) {
	t.Setenv("TOOLHOST_HOME", filepath.Join(t.TempDir(), "home"))
	bundle := filepath.Join(t.TempDir(), "time.plugin")
	if err := os.WriteFile(bundle, testplugins.Bundle(t, "time").Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut testplugins.SyncBuffer
	if code := run(context.Background(), []string{"--dev-allow-unsigned", "plugin", "install", bundle}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("install exited %d: %s", code, errOut.String())
	}
	bench := []string{"--dev-allow-unsigned", "bench", "get_current_time", "--args", `{"timezone":"UTC"}`, "-c", "1", "-d", "10m"}

	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = testplugins.SyncBuffer{}, testplugins.SyncBuffer{}
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, bench, strings.NewReader(""), &out, &errOut) }()
	// Interrupt once a call has finished and been counted: with one
	// caller, a second call's audit record means the first returned (on a
	// loaded machine the first call of a Go guest can outlast the start
	// message's lead, and the bench then has nothing to print).
	logPath := filepath.Join(os.Getenv("TOOLHOST_HOME"), "audit.jsonl")
	for {
		if b, _ := os.ReadFile(logPath); strings.Count(string(b), `"tool":"get_current_time"`) >= 2 {
			break
		}
		select {
		case code := <-exited:
			t.Fatalf("bench exited %d before a call finished: %s", code, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if code := <-exited; code != exitInterrupted {
		t.Errorf("interrupted bench exited %d, want %d\n%s", code, exitInterrupted, errOut.String())
	}
	if !strings.Contains(errOut.String(), "bench was interrupted after") || !strings.Contains(out.String(), "calls/s") {
		t.Errorf("interrupted bench does not print its figures and say it was cut short:\n%s\n%s", out.String(), errOut.String())
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	errOut = testplugins.SyncBuffer{}
	if code := run(ctx, bench, strings.NewReader(""), &out, &errOut); code != exitInterrupted {
		t.Errorf("bench interrupted before it started exited %d, want %d\n%s", code, exitInterrupted, errOut.String())
	}
}
