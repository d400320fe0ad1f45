package sandbox

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// compileFile compiles the module at path with the in-process engine, as
// the host does, with every export in exports.
func compileFile(t *testing.T, path string, reuse bool, exports ...string) *inProcessModule {
	t.Helper()
	return compileSpec(t, path, engine.Spec{Name: "leak", Exports: exports, ReuseInstances: reuse})
}

// compileSpec compiles the module at path with the in-process engine under
// spec (its Key and Wasm set from path, its limits those of the tests).
func compileSpec(t *testing.T, path string, spec engine.Spec) *inProcessModule {
	t.Helper()
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewInProcess("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	spec.Key, spec.Wasm = path, wasm
	spec.Limits = plugin.Limits{MemoryPages: 16, TimeoutMS: 10_000, MaxOutputBytes: 1 << 20}
	m, err := e.Compile(context.Background(), spec)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m.(*inProcessModule)
}

// leaked calls peek and returns the bits of state it found (its error
// code; 0 when the call succeeded).
func leaked(t *testing.T, m *inProcessModule) int {
	t.Helper()
	_, err := m.Call(context.Background(), "peek", nil)
	if err == nil {
		return 0
	}
	var bits int
	if te := toolerr.As(err); te == nil || te.Code != toolerr.CodePluginError {
		t.Fatalf("peek: %v, want success or a plugin error code", err)
	} else if _, serr := fmt.Sscanf(te.Message, "the tool returned error code %d", &bits); serr != nil {
		t.Fatalf("peek: %v", err)
	}
	return bits
}

// TestCallNoStateSurvives runs fresh calls (no reuse_instances) through
// Module.Call on a module that tries to leave state behind in each place
// an instance holds it. The control arm reuses instances and must see
// every leak, so the test can tell; the fresh arm, which resets instances
// to their snapshot (or closes them when a reset cannot make them fresh),
// must see none, call after call.
func TestCallNoStateSurvives(t *testing.T) {
	cases := []struct {
		export string
		bits   int
	}{
		{"leak", 0b11111}, // memory (data segment, a page, the last page) and globals
		{"grow", 32},      // grown memory: the reset refuses, the instance is closed
		{"closeout", 64},  // WASI descriptor table: the call taints the instance
	}
	exports := []string{"leak", "grow", "closeout", "setvar", "peek"}
	for _, c := range cases {
		t.Run(c.export, func(t *testing.T) {
			control := compileFile(t, "testdata/callleak.wasm", true, exports...)
			if _, err := control.Call(context.Background(), c.export, nil); err != nil {
				t.Fatal(err)
			}
			if got := leaked(t, control); got != c.bits {
				t.Fatalf("control (reused instance): peek found %08b after %s, want %08b: the test cannot see this leak", got, c.export, c.bits)
			}

			m := compileFile(t, "testdata/callleak.wasm", false, exports...)
			if m.prep == nil {
				t.Fatal("the module was not prepared for snapshots: fresh calls would not test the reset")
			}
			for i := range 3 {
				if _, err := m.Call(context.Background(), c.export, nil); err != nil {
					t.Fatalf("round %d: %s: %v", i, c.export, err)
				}
				if got := leaked(t, m); got != 0 {
					t.Fatalf("round %d: peek found %08b after %s: state survived a fresh call", i, got, c.export)
				}
			}
		})
	}
	// Extism variables are off in this host (var_set fails the call), and
	// a reset clears them anyway (TestResettableVars).
	t.Run("setvar", func(t *testing.T) {
		m := compileFile(t, "testdata/callleak.wasm", false, exports...)
		if _, err := m.Call(context.Background(), "setvar", nil); err == nil {
			t.Fatal("setvar succeeded: variables are enabled, and this test must then show they do not leak")
		}
		if got := leaked(t, m); got != 0 {
			t.Fatalf("peek found %08b after setvar", got)
		}
	})
}

// TestReuseTakesTheDirectPath: a module that opts in to reuse is
// prepared like a fresh one, so its calls take the direct path (call
// engines kept per instance), but its instance has no snapshot: it keeps
// its state from call to call and cannot be reset. (That a failed call's
// instance is not reused: TestReuseInstancesIsTheManifestsOptIn.)
func TestReuseTakesTheDirectPath(t *testing.T) {
	m := compileFile(t, "testdata/callleak.wasm", true, "leak", "peek")
	if m.prep == nil {
		t.Fatal("a reuse module was not prepared: its calls take extism's slower path")
	}
	for i := range 3 {
		if _, err := m.Call(context.Background(), "leak", nil); err != nil {
			t.Fatalf("round %d: leak: %v", i, err)
		}
		if got := leaked(t, m); got != 0b11111 {
			t.Fatalf("round %d: peek found %08b, want %08b: the reused instance lost its state", i, got, 0b11111)
		}
	}
	// peek reports what it found as a failed call, which closes a reused
	// instance; a clean call gives it back.
	if _, err := m.Call(context.Background(), "leak", nil); err != nil {
		t.Fatal(err)
	}
	var in *instance
	select {
	case in = <-m.ready:
	default:
		t.Fatal("the reused instance did not go back to the module after a clean call")
	}
	defer m.put(in)
	if in.r == nil || in.r.direct == nil {
		t.Fatal("the reused instance does not call through directCall")
	}
	if in.r.state != nil {
		t.Fatal("a reused instance was snapshotted: memory for an image it never resets to")
	}
	if err := in.r.reset(); err == nil {
		t.Fatal("a reused instance without a snapshot reset without an error")
	}
}

// TestCallResetsInstances: a clean fresh call gives its instance back,
// reset, for the next call (the reset is on the call path); a call that
// grew memory does not.
func TestCallResetsInstances(t *testing.T) {
	m := compileFile(t, "testdata/callleak.wasm", false, "leak", "grow", "peek")
	ready := func() *instance {
		t.Helper()
		in := <-m.ready // firstInstance's, or the one a call gave back
		if in.r == nil {
			t.Fatal("a ready instance cannot be reset")
		}
		return in
	}
	first := ready()
	m.ready <- first
	if _, err := m.Call(context.Background(), "leak", nil); err != nil {
		t.Fatal(err)
	}
	if in := ready(); in != first {
		t.Fatal("the instance of a clean call was not given back after its reset")
	}
	m.ready <- first
	if _, err := m.Call(context.Background(), "grow", nil); err != nil {
		t.Fatal(err)
	}
	m.filling.Lock() // the refill that replaces it has ended
	defer m.filling.Unlock()
	if in := ready(); in == first {
		t.Fatal("the instance whose memory grew was given back")
	}
}

// TestCallTableMutationGetsFreshInstances: a module that changes its
// table is not prepared for snapshots; its fresh calls get real fresh
// instances, and nothing survives there either.
func TestCallTableMutationGetsFreshInstances(t *testing.T) {
	control := compileFile(t, "testdata/tableleak.wasm", true, "leak", "peek")
	if _, err := control.Call(context.Background(), "leak", nil); err != nil {
		t.Fatal(err)
	}
	if got := leaked(t, control); got != 1 {
		t.Fatalf("control (reused instance): peek = %d after leak, want 1", got)
	}
	m := compileFile(t, "testdata/tableleak.wasm", false, "leak", "peek")
	if m.prep != nil {
		t.Fatal("a module that changes its table was prepared for snapshots")
	}
	for i := range 3 {
		if _, err := m.Call(context.Background(), "leak", nil); err != nil {
			t.Fatal(err)
		}
		if got := leaked(t, m); got != 0 {
			t.Fatalf("round %d: the table entry survived a fresh call", i)
		}
	}
}

// TestCallKernelMemoryDoesNotSurvive: bytes a call leaves in the Extism
// kernel's memory are gone for the next fresh call.
func TestCallKernelMemoryDoesNotSurvive(t *testing.T) {
	m := compileFile(t, "testdata/kernelsnoop.wasm", false, "plant", "snoop")
	for i := range 3 {
		if _, err := m.Call(context.Background(), "plant", []byte("the password is SECRET!! indeed")); err != nil {
			t.Fatal(err)
		}
		out, err := m.Call(context.Background(), "snoop", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 || out[0] != 0 {
			t.Fatalf("round %d: snoop found %v, want [0]: the kernel's memory survived a fresh call", i, out)
		}
	}
}

// TestCallThenResetsInFinish: CallThen leaves the reset to finish, so a
// worker answers first — and nothing of the unfinished call's instance
// reaches another call: a call made before finish gets another instance
// (fresh: peek finds nothing), and calls after finish find nothing either,
// whether the call succeeded (the instance is reset) or failed (it is
// closed). The control arm (reused instances) shows that peek sees the
// leak.
func TestCallThenResetsInFinish(t *testing.T) {
	exports := []string{"leak", "grow", "closeout", "setvar", "peek"}
	control := compileFile(t, "testdata/callleak.wasm", true, exports...)
	out, finish, err := control.CallThen(context.Background(), "leak", nil)
	finish()
	if err != nil {
		t.Fatal(err)
	}
	if got := leaked(t, control); got == 0 {
		t.Fatalf("control (reused instance): peek found nothing after leak: the test cannot see the leak (output %q)", out)
	}

	m := compileFile(t, "testdata/callleak.wasm", false, exports...)
	for i, export := range []string{"leak", "grow", "setvar", "leak"} {
		_, finish, err := m.CallThen(context.Background(), export, nil)
		if (err != nil) != (export == "setvar") {
			t.Fatalf("round %d: %s: %v", i, export, err)
		}
		if got := leaked(t, m); got != 0 {
			finish()
			t.Fatalf("round %d: peek before finish found %08b after %s: it got the unfinished call's instance", i, got, export)
		}
		finish()
		for j := range 2 {
			if got := leaked(t, m); got != 0 {
				t.Fatalf("round %d: peek %d after finish found %08b after %s: state survived", i, j, got, export)
			}
		}
	}
	// The module cannot be closed under an unfinished call; once it is
	// finished, Close goes ahead.
	_, finish, err = m.CallThen(context.Background(), "leak", nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the call was finished", err)
	case <-time.After(50 * time.Millisecond):
	}
	finish()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
