package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// compilePrepared prepares the module at path for snapshots and compiles
// it with extism as the engine does (WASI, the snapshot listener).
func compilePrepared(tb testing.TB, path string) (*extism.CompiledPlugin, *prepared) {
	tb.Helper()
	ctx := context.Background()
	wasm, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	prep, err := prepareForSnapshot(wasm)
	if err != nil {
		tb.Fatal(err)
	}
	cctx := experimental.WithFunctionListenerFactory(ctx, snapshotListeners{})
	cp, err := extism.NewCompiledPlugin(cctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: prep.wasm, Name: "main"}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cp.Close(ctx) })
	return cp, prep
}

func resettableOf(tb testing.TB, path string) *resettable {
	return resettableCopying(tb, path, defaultCopyMax)
}

func resettableCopying(tb testing.TB, path string, copyMax uint64) *resettable {
	tb.Helper()
	cp, prep := compilePrepared(tb, path)
	r, err := newResettable(context.Background(), cp, prep, &imageAllocator{limit: 512 * 65536, copyMax: copyMax}, extism.PluginInstanceConfig{}, true)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.p.Close(context.Background()) })
	return r
}

func extismCall(t *testing.T, r *resettable, export string, input []byte) []byte {
	t.Helper()
	rc, out, err := r.call(context.Background(), export, input)
	if err != nil || rc != 0 {
		t.Fatalf("%s: rc %d, %v", export, rc, err)
	}
	return out
}

// TestResettableGlobals: echo.wasm's counter export counts the calls its
// instance ran in a mutable global; with a reset after each call every
// call is the instance's first.
func TestResettableGlobals(t *testing.T) {
	r := resettableOf(t, "../../testdata/echo/echo.wasm")
	for i := range 3 {
		if out := extismCall(t, r, "counter", nil); string(out) != "1" {
			t.Fatalf("call %d: counter = %q, want 1 (state survived a reset)", i+1, out)
		}
		if err := r.reset(); err != nil {
			t.Fatal(err)
		}
	}
	if out := extismCall(t, r, "echo", []byte(`{"a":1}`)); string(out) != `{"a":1}` {
		t.Fatalf("echo after resets = %q", out)
	}
}

// TestResettableKernelMemory: bytes a call stores in the Extism kernel's
// memory outside any allocation survive the kernel's own reset (the
// control arm: plain reuse leaks them); the snapshot reset removes them,
// and an earlier call's input too.
func TestResettableKernelMemory(t *testing.T) {
	r := resettableOf(t, "testdata/kernelsnoop.wasm")
	extismCall(t, r, "plant", nil)
	if out := extismCall(t, r, "snoop", nil); len(out) != 1 || out[0] != 1 {
		t.Fatalf("control: without a reset the snoop found %v, want [1]: it cannot see leaks", out)
	}
	if err := r.reset(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		extismCall(t, r, "plant", []byte("the password is SECRET!! indeed"))
		if err := r.reset(); err != nil {
			t.Fatal(err)
		}
		if out := extismCall(t, r, "snoop", nil); len(out) != 1 || out[0] != 0 {
			t.Fatalf("round %d: after a reset the snoop found %v, want [0]: the input survived", i, out)
		}
		if err := r.reset(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResettableVars: extism's per-instance variables (var_set) do not
// survive a reset.
func TestResettableVars(t *testing.T) {
	r := resettableOf(t, "../../testdata/echo/echo.wasm")
	r.p.Var["left"] = []byte("behind")
	if err := r.reset(); err != nil {
		t.Fatal(err)
	}
	if len(r.p.Var) != 0 {
		t.Fatalf("vars after reset: %v", r.p.Var)
	}
}

// BenchmarkResettable: a call plus a reset, against a fresh extism
// instance per call (extism-direct-fresh in test/bench).
func BenchmarkResettable(b *testing.B) {
	input := []byte(`{"query":"weather in Paris","units":"metric","days":3,"lang":"en"}`)
	ctx := context.Background()
	b.Run("reset", func(b *testing.B) {
		r := resettableOf(b, "../../testdata/echo/echo.wasm")
		for b.Loop() {
			if _, _, err := r.p.CallWithContext(ctx, "echo", input); err != nil {
				b.Fatal(err)
			}
			if err := r.reset(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fresh-instance", func(b *testing.B) {
		cp, _ := compilePrepared(b, "../../testdata/echo/echo.wasm")
		for b.Loop() {
			p, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := p.CallWithContext(ctx, "echo", input); err != nil {
				b.Fatal(err)
			}
			p.Close(ctx)
		}
	})
	b.Run("reused-instance", func(b *testing.B) {
		r := resettableOf(b, "../../testdata/echo/echo.wasm")
		for b.Loop() {
			if _, _, err := r.p.CallWithContext(ctx, "echo", input); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestResettableGoGuest: a Go guest snapshotted after its runtime started
// answers call after call from the same state, and its calls are not
// slowed by runtime start (BenchmarkResettableGoGuest).
func TestResettableGoGuest(t *testing.T) {
	r := resettableOf(t, filepath.Join(testplugins.Dir(t, "time"), "plugin.wasm"))
	for i := range 3 {
		out := extismCall(t, r, "get_current_time", []byte(`{"timezone":"Europe/Paris"}`))
		if !bytes.Contains(out, []byte(`"timezone":"Europe/Paris"`)) {
			t.Fatalf("call %d: %s", i+1, out)
		}
		if err := r.reset(); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
}

func BenchmarkResettableGoGuest(b *testing.B) {
	ctx := context.Background()
	input := []byte(`{"timezone":"Europe/Paris"}`)
	path := filepath.Join(testplugins.Dir(b, "time"), "plugin.wasm")
	for _, c := range []struct {
		name    string
		reset   bool
		copyMax uint64
	}{{"reset-discarding-pages", true, 0}, {"reset-copying", true, 1 << 30}, {"reused-instance", false, 0}} {
		reset := c.reset
		b.Run(c.name, func(b *testing.B) {
			r := resettableCopying(b, path, c.copyMax)
			for b.Loop() {
				if _, _, err := r.p.CallWithContext(ctx, "get_current_time", input); err != nil {
					b.Fatal(err)
				}
				if reset {
					if err := r.reset(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestResettableWASIState: a call that changes WASI state the snapshot
// does not hold (closing stdout) makes reset refuse, so the instance is
// closed; a stateless WASI call (the clock) does not.
func TestResettableWASIState(t *testing.T) {
	r := resettableOf(t, "testdata/wasistate.wasm")
	extismCall(t, r, "clock", nil)
	if err := r.reset(); err != nil {
		t.Fatalf("reset after reading the clock: %v", err)
	}
	extismCall(t, r, "close", nil)
	if err := r.reset(); err == nil || !strings.Contains(err.Error(), "WASI state") {
		t.Fatalf("reset after closing stdout: %v, want a refusal naming WASI state", err)
	}
}
