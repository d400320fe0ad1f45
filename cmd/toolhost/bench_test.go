package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/api/control"
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

// TestBenchStopsWhenTheServeGoesAway: a bench through a running serve
// whose serve stops midway ends there, prints what it measured before and
// exits 1 saying the host stopped answering. It used to keep calling the
// vanished socket for the rest of -d, counted every refused connection as
// a failed call (tens of thousands a second, so calls/s went up tenfold)
// and exited 0 because not every call had failed.
func TestBenchStopsWhenTheServeGoesAway(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	bundle := filepath.Join(t.TempDir(), "time.plugin")
	if err := os.WriteFile(bundle, testplugins.Bundle(t, "time").Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut testplugins.SyncBuffer
	if code := run(context.Background(), []string{"--home", home, "--dev-allow-unsigned", "plugin", "install", bundle}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("install exited %d: %s", code, errOut.String())
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	defer stopServe()
	var serveErr testplugins.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(serveCtx, []string{"--home", home, "--dev-allow-unsigned", "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, &serveErr)
	}()
	sock := filepath.Join(home, control.SocketName)
	for {
		if c, err := control.Dial(context.Background(), sock); err == nil {
			c.Close()
			break
		}
		select {
		case code := <-served:
			t.Fatalf("serve ended with %d before serving: %s", code, serveErr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}

	out, errOut = testplugins.SyncBuffer{}, testplugins.SyncBuffer{}
	benched := make(chan int, 1)
	go func() {
		benched <- run(context.Background(), []string{"--home", home, "bench", "get_current_time", "-c", "2", "-d", "10m"}, strings.NewReader(""), &out, &errOut)
	}()
	// Stop serve once the bench's calls are being answered (the serve
	// records each one in the audit log).
	logPath := filepath.Join(home, "audit.jsonl")
	for {
		if b, _ := os.ReadFile(logPath); strings.Count(string(b), `"tool":"get_current_time"`) >= 3 {
			break
		}
		select {
		case code := <-benched:
			t.Fatalf("bench exited %d before serve stopped: %s", code, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	stopServe()
	if code := <-served; code != 0 {
		t.Errorf("serve exited %d: %s", code, serveErr.String())
	}
	// A watchdog, not a timing assertion: without the fix the bench runs
	// its whole 10 minutes.
	select {
	case code := <-benched:
		if code != exitError {
			t.Errorf("bench whose serve went away exited %d, want %d\n%s", code, exitError, errOut.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("bench kept calling for 2 minutes after its serve stopped:\n%s", errOut.String())
	}
	if !strings.Contains(errOut.String(), "because the host stopped answering; the figures above cover only the calls before") ||
		!strings.Contains(errOut.String(), "start `toolhost serve` again") {
		t.Errorf("bench does not say its host went away and what to do:\n%s", errOut.String())
	}
	if !strings.Contains(out.String(), "calls/s") {
		t.Errorf("bench does not print what it measured before its serve went away:\n%s", out.String())
	}
}

// TestCLICallsAreAuditedAsCLI: the calls a toolhost command makes are
// recorded with entry "cli" whether they run in a host the command opened
// or through a running serve. bench without a serve recorded its calls as
// "go" (the Go API: a context nobody labelled), so an auditor saw Go API
// calls in a home no Go program had touched.
func TestCLICallsAreAuditedAsCLI(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	bundle := filepath.Join(t.TempDir(), "time.plugin")
	if err := os.WriteFile(bundle, testplugins.Bundle(t, "time").Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"plugin", "install", bundle},
		{"call", "get_current_time", `{"timezone":"UTC"}`},
		{"bench", "get_current_time", "-c", "2", "-d", "1ns"},
	} {
		var out, errOut testplugins.SyncBuffer
		if code := run(context.Background(), append([]string{"--home", home, "--dev-allow-unsigned"}, args...), strings.NewReader(""), &out, &errOut); code != 0 {
			t.Fatalf("%q exited %d: %s", args, code, errOut.String())
		}
	}
	log, err := os.ReadFile(filepath.Join(home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for line := range strings.Lines(string(log)) {
		if !strings.Contains(line, `"tool":"get_current_time"`) {
			continue
		}
		calls++
		if !strings.Contains(line, `"entry":"cli"`) {
			t.Errorf("a call made by a toolhost command is not recorded as entry cli:\n%s", line)
		}
	}
	if calls < 4 { // call, bench's first call, one per bench caller
		t.Errorf("%d call records, want at least 4:\n%s", calls, log)
	}
}
