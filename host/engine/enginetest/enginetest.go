// Package enginetest is the conformance suite of the engine contract
// (package engine): one set of tests that every implementation must pass,
// run from each implementation's own tests, the way restic runs one suite
// against every storage backend.
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, func(t *testing.T) engine.Engine { return newMyEngine(t) })
//	}
//
// It pins what the host relies on: fresh instances by default and reuse
// only on opt-in, the typed errors (timeout, memory_limit,
// output_too_large, plugin_error, permission_denied, cancelled), deadlines
// that cover loading and instantiating as well as running, cancellation
// that frees what a call held, and concurrent calls. Time bounds are
// generous (seconds over the target) so that a loaded machine does not make
// them flake; the measured times are logged.
package enginetest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// The fixtures, built from the .wat files next to them (wat2wasm).
var (
	//go:embed testdata/suite.wasm
	suiteWasm []byte
	//go:embed testdata/start_spin.wasm
	startSpinWasm []byte
)

// SuiteExports are the exports of the suite module.
var SuiteExports = []string{"echo", "count", "loop", "busy", "grow", "big_output", "trap", "events", "log_flood", "fill", "fill_mib"}

// slack is added to every time bound: far more than the contract's
// figures, so that only a real failure to stop (seconds to minutes) fails.
const slack = 3 * time.Second

// Run runs the conformance suite against the engine newEngine returns.
// Run closes it at the end.
func Run(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := newEngine(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	s := &suite{e: e}
	t.Run("Echo", s.echo)
	t.Run("FreshInstances", s.fresh)
	t.Run("ReuseInstances", s.reuse)
	t.Run("Timeout", s.timeout)
	t.Run("CallerDeadline", s.callerDeadline)
	t.Run("MemoryLimit", s.memoryLimit)
	t.Run("OutputTooLarge", s.outputTooLarge)
	t.Run("Trap", s.trap)
	t.Run("PermissionDenied", s.permissionDenied)
	t.Run("Cancellation", s.cancellation)
	t.Run("CancelledBeforeCall", s.cancelledBefore)
	// Refused first: it leaves the module in the compilation cache, so the
	// call-deadline case measures instantiation, not the compiler (which
	// the in-process engine cannot interrupt).
	t.Run("SpinningStartRefused", s.spinningStartInstall)
	t.Run("SpinningStartWithinCallDeadline", s.spinningStartCall)
	t.Run("Concurrency", s.concurrency)
	t.Run("Events", s.events)
	t.Run("EventsBounded", s.eventsBounded)
	t.Run("EventsUnasked", s.eventsUnasked)
}

type suite struct{ e engine.Engine }

// Spec is the suite module under name with limits; name is also its key.
func Spec(name string, limits plugin.Limits) engine.Spec {
	if limits.MemoryPages == 0 {
		limits.MemoryPages = 32
	}
	if limits.TimeoutMS == 0 {
		limits.TimeoutMS = 5000
	}
	if limits.MaxOutputBytes == 0 {
		limits.MaxOutputBytes = 1 << 20
	}
	return engine.Spec{Key: "enginetest/" + name, Name: name, Wasm: suiteWasm, Limits: limits, Exports: SuiteExports}
}

func (s *suite) compile(t *testing.T, spec engine.Spec) engine.Module {
	t.Helper()
	m, err := s.e.Compile(context.Background(), spec)
	if err != nil {
		t.Fatalf("Compile %s: %v", spec.Name, err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// wantCode fails unless err is an *toolerr.Error with code and a message.
func wantCode(t *testing.T, what string, err error, code toolerr.Code) {
	t.Helper()
	var te *toolerr.Error
	switch {
	case err == nil:
		t.Fatalf("%s: succeeded, want %s", what, code)
	case !errors.As(err, &te):
		t.Fatalf("%s: %T %v, want an *toolerr.Error with code %s", what, err, err, code)
	case te.Code != code:
		t.Fatalf("%s: %v, want code %s", what, err, code)
	case strings.TrimSpace(te.Message) == "":
		t.Fatalf("%s: code %s without a message", what, code)
	}
}

func (s *suite) echo(t *testing.T) {
	m := s.compile(t, Spec("echo", plugin.Limits{}))
	in := []byte(`{"text":"héllo, engine"}`)
	out, err := m.Call(context.Background(), "echo", in)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("echo: %q, %v; want %q", out, err, in)
	}
}

func (s *suite) fresh(t *testing.T) {
	m := s.compile(t, Spec("fresh", plugin.Limits{}))
	for i := range 4 {
		out, err := m.Call(context.Background(), "count", []byte(`{}`))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if string(out) != "1" {
			t.Fatalf("call %d of a fresh-instance module returned %q, want 1: state leaked from an earlier call", i, out)
		}
	}
}

func (s *suite) reuse(t *testing.T) {
	spec := Spec("reuse", plugin.Limits{})
	spec.ReuseInstances = true
	m := s.compile(t, spec)
	var outs []string
	for i := range 4 {
		out, err := m.Call(context.Background(), "count", []byte(`{}`))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		outs = append(outs, string(out))
	}
	// An engine may run calls in more than one instance (one per worker),
	// but calls one after another must find an instance's state again.
	if !strings.ContainsAny(strings.Join(outs[1:], ""), "23456789") {
		t.Fatalf("ReuseInstances: counts %v; no call saw state kept from an earlier one", outs)
	}
}

// timed runs f and returns how long it took.
func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

func (s *suite) timeout(t *testing.T) {
	m := s.compile(t, Spec("timeout", plugin.Limits{TimeoutMS: 300}))
	loopTimesOut(t, m, context.Background(), "a spinning 300 ms tool")
}

func (s *suite) callerDeadline(t *testing.T) {
	m := s.compile(t, Spec("deadline", plugin.Limits{TimeoutMS: 30_000}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	loopTimesOut(t, m, ctx, "a spinning call under a 300 ms caller deadline")
}

// loopTimesOut calls loop, which a 300 ms deadline must stop with timeout.
func loopTimesOut(t *testing.T, m engine.Module, ctx context.Context, what string) {
	t.Helper()
	var err error
	d := timed(func() { _, err = m.Call(ctx, "loop", []byte(`{}`)) })
	wantCode(t, what, err, toolerr.CodeTimeout)
	if d > 300*time.Millisecond+slack {
		t.Fatalf("%s ended after %v", what, d)
	}
	t.Logf("%s stopped after %v", what, d.Round(time.Millisecond))
}

func (s *suite) memoryLimit(t *testing.T) {
	m := s.compile(t, Spec("memory", plugin.Limits{MemoryPages: 32}))
	_, err := m.Call(context.Background(), "grow", []byte(`{}`))
	wantCode(t, "growing past 32 pages", err, toolerr.CodeMemoryLimit)
}

func (s *suite) outputTooLarge(t *testing.T) {
	m := s.compile(t, Spec("output", plugin.Limits{MemoryPages: 128, MaxOutputBytes: 1024}))
	_, err := m.Call(context.Background(), "big_output", []byte(`{}`))
	wantCode(t, "2 MiB output under a 1 KiB cap", err, toolerr.CodeOutputTooLarge)
}

func (s *suite) trap(t *testing.T) {
	m := s.compile(t, Spec("trap", plugin.Limits{}))
	_, err := m.Call(context.Background(), "trap", []byte(`{}`))
	wantCode(t, "unreachable", err, toolerr.CodePluginError)
	// The module still serves calls after a trap.
	if out, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil || string(out) != "{}" {
		t.Fatalf("echo after a trap: %q, %v", out, err)
	}
}

func (s *suite) permissionDenied(t *testing.T) {
	spec := Spec("denied", plugin.Limits{})
	spec.Permissions.AllowedPaths = map[string]string{filepath.Join(t.TempDir(), "missing"): "/data"}
	m, err := s.e.Compile(context.Background(), spec)
	if err == nil {
		m.Close(context.Background())
	}
	wantCode(t, "a grant of a path that does not exist", err, toolerr.CodePermissionDenied)
}

// cancellation: a caller that goes away mid-call gets cancelled at once,
// and what the call held is free again: the next call of the same module
// answers promptly.
func (s *suite) cancellation(t *testing.T) {
	m := s.compile(t, Spec("cancel", plugin.Limits{TimeoutMS: 30_000}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, "loop", []byte(`{}`))
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond) // it spins
	cancelled := time.Now()
	cancel()
	var err error
	select {
	case err = <-errc:
	case <-time.After(slack + 5*time.Second):
		t.Fatal("the call did not end after its caller went away")
	}
	ended := time.Since(cancelled)
	wantCode(t, "a call whose caller went away", err, toolerr.CodeCancelled)
	var out []byte
	next := timed(func() { out, err = m.Call(context.Background(), "echo", []byte(`{"n":1}`)) })
	if err != nil || string(out) != `{"n":1}` {
		t.Fatalf("the next call after a cancellation: %q, %v", out, err)
	}
	if ended > 200*time.Millisecond+slack || next > slack {
		t.Fatalf("cancelled call ended %v after its cancellation; the next call took %v", ended, next)
	}
	t.Logf("cancelled call ended %v after the cancellation; the next call took %v",
		ended.Round(time.Millisecond), next.Round(time.Millisecond))
}

func (s *suite) cancelledBefore(t *testing.T) {
	m := s.compile(t, Spec("cancel_before", plugin.Limits{}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Call(ctx, "echo", []byte(`{}`))
	wantCode(t, "a call whose caller had gone already", err, toolerr.CodeCancelled)
}

func startSpinSpec(name string, timeoutMS uint32) engine.Spec {
	return engine.Spec{
		Key: "enginetest/" + name, Name: name, Wasm: startSpinWasm, Exports: []string{"run"},
		Limits: plugin.Limits{MemoryPages: 16, TimeoutMS: timeoutMS, MaxOutputBytes: 1024},
	}
}

// spinningStartCall: the host compiles a plugin on its first call, under
// that call's deadline; a start function that spins makes a 1 s call end
// with timeout in about 1 s.
func (s *suite) spinningStartCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var err error
	var m engine.Module
	d := timed(func() { m, err = s.e.Compile(ctx, startSpinSpec("start_spin_call", 1000)) })
	if err == nil {
		m.Close(context.Background())
	}
	wantCode(t, "compiling a module whose start function spins, under a 1 s deadline", err, toolerr.CodeTimeout)
	if d > time.Second+slack {
		t.Fatalf("a 1 s deadline ended after %v", d)
	}
	t.Logf("spinning start function under a 1 s call deadline: timeout after %v", d.Round(time.Millisecond))
}

// spinningStartInstall: without a deadline (an install), instantiation
// gets the tool's timeout and the module is refused as invalid.
func (s *suite) spinningStartInstall(t *testing.T) {
	var err error
	var m engine.Module
	d := timed(func() { m, err = s.e.Compile(context.Background(), startSpinSpec("start_spin_install", 500)) })
	if err == nil {
		m.Close(context.Background())
	}
	wantCode(t, "compiling a module whose start function spins", err, toolerr.CodeInvalidModule)
	if d > 500*time.Millisecond+slack {
		t.Fatalf("refusing a 500 ms tool's spinning start function took %v", d)
	}
	t.Logf("spinning start function refused after %v: %v", d.Round(time.Millisecond), err)
}

func (s *suite) concurrency(t *testing.T) {
	m := s.compile(t, Spec("concurrent", plugin.Limits{TimeoutMS: 20_000}))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				in := fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i)
				out, err := m.Call(context.Background(), "echo", in)
				if err != nil || !bytes.Equal(out, in) {
					errs <- fmt.Errorf("goroutine %d call %d: %q, %v", g, i, out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
