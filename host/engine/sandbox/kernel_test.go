package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// importsOf lists a module's function imports as "module.name".
func importsOf(t *testing.T, wasm []byte) map[string]bool {
	t.Helper()
	r := wazero.NewRuntime(context.Background())
	defer r.Close(context.Background())
	cm, err := r.CompileModule(context.Background(), wasm)
	if err != nil {
		t.Fatalf("the module does not compile: %v", err)
	}
	got := map[string]bool{}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		got[mod+"."+name] = true
	}
	return got
}

// The forwarding functions move to kernelModule; extism's Go functions
// (input_load_u64, store_u64) stay where they were; the rest of the module
// is unchanged, so it still compiles; a module without them is returned
// as it is.
func TestRedirectKernelImports(t *testing.T) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "echo", "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	before := importsOf(t, wasm)
	out := redirectKernelImports(wasm)
	after := importsOf(t, out)
	if len(after) != len(before) {
		t.Fatalf("imports %v became %v", before, after)
	}
	for imp := range before {
		mod, name, _ := bytes.Cut([]byte(imp), []byte("."))
		_, fwd := kernelIndex[string(name)]
		want := imp
		if fwd && string(mod) == envModule {
			want = kernelModule + "." + string(name)
		}
		if !after[want] {
			t.Errorf("import %s: want %s after the redirect; got %v", imp, want, after)
		}
	}
	if after[kernelModule+".input_load_u64"] || !after[envModule+".input_load_u64"] {
		t.Errorf("input_load_u64 (an extism Go function) was redirected: %v", after)
	}
	if again := redirectKernelImports(out); !bytes.Equal(again, out) {
		t.Error("redirecting a redirected module changed it")
	}
	none := []byte("\x00asm\x01\x00\x00\x00")
	if got := redirectKernelImports(none); &got[0] != &none[0] {
		t.Error("a module without kernel imports was copied")
	}
	if got := redirectKernelImports(wasm[:20]); !bytes.Equal(got, wasm[:20]) {
		t.Error("a truncated module was changed")
	}
}

// A call's kernel functions run through the instance's kept call engines:
// after two calls on a reused instance the guard holds them, and the
// kernel's answers (input, allocation, output) are still right.
func TestKernelCallEnginesAreKept(t *testing.T) {
	m := compileFile(t, filepath.Join("..", "..", "testdata", "echo", "echo.wasm"), true, "echo")
	for _, in := range []string{`{"a":1}`, `{"query":"weather in Paris","units":"metric"}`} {
		out, err := m.Call(context.Background(), "echo", []byte(in))
		if err != nil || string(out) != in {
			t.Fatalf("echo %s: %q, %v", in, out, err)
		}
	}
	in := <-m.ready
	defer func() { m.ready <- in }()
	if in.g.kfns == nil {
		t.Fatal("the instance's guard holds no kernel call engines: the calls did not go through kernelModule")
	}
	for _, name := range []string{"input_length", "alloc", "output_set"} {
		if in.g.kfns.fns[kernelIndex[name]] == nil {
			t.Errorf("no kept call engine for %s", name)
		}
	}
}

// A fresh (reset) instance calls its exports directly, as extism would,
// with the right answers: output, an error the guest set, an export that
// does not exist (extism's own path answers that one).
func TestDirectCall(t *testing.T) {
	m := compileFile(t, filepath.Join("..", "..", "testdata", "echo", "echo.wasm"), false, "echo", "fail", "counter")
	if _, err := m.Call(context.Background(), "fail", nil); err == nil || !strings.Contains(err.Error(), "echo refused this input") {
		t.Fatalf("fail: %v, want the error the guest set", err)
	}
	for i := range 3 {
		out, err := m.Call(context.Background(), "echo", []byte(`{"i":1}`))
		if err != nil || string(out) != `{"i":1}` {
			t.Fatalf("echo %d: %q, %v", i, out, err)
		}
		if out, err := m.Call(context.Background(), "counter", nil); err != nil || string(out) != "1" {
			t.Fatalf("counter %d on a fresh instance: %q, %v", i, out, err)
		}
	}
	in := <-m.ready
	defer func() { m.ready <- in }()
	if in.r == nil || in.r.direct == nil {
		t.Fatal("the fresh instance has no direct call path")
	}
	if in.r.direct.exports["echo"].f == nil || in.r.direct.k.fns[kernelIndex["output_length"]] == nil {
		t.Errorf("the direct path kept no call engines: exports %v", in.r.direct.exports)
	}
	rc, _, err := in.r.call(context.Background(), "no_such_export", nil)
	if err == nil || rc != 1 {
		t.Errorf("a missing export: rc %d, %v; want extism's unknown function error", rc, err)
	}
}

// An export that returns an error (a return code and a message) leaves
// its instance to be reset and kept, as a success does, not closed: the
// next call finds the same instance, fresh. A trap still closes it.
func TestGuestErrorKeepsTheInstance(t *testing.T) {
	m := compileFile(t, filepath.Join("..", "..", "testdata", "echo", "echo.wasm"), false, "echo", "fail", "counter")
	if out, err := m.Call(context.Background(), "counter", nil); err != nil || string(out) != "1" {
		t.Fatalf("counter: %q, %v", out, err)
	}
	first := <-m.ready
	m.ready <- first
	if _, err := m.Call(context.Background(), "fail", nil); err == nil {
		t.Fatal("fail: no error")
	}
	if out, err := m.Call(context.Background(), "counter", nil); err != nil || string(out) != "1" {
		t.Fatalf("counter after a guest error: %q, %v (want a fresh instance: 1)", out, err)
	}
	kept := <-m.ready
	m.ready <- kept
	if kept != first {
		t.Error("the instance was closed after a guest-reported error instead of being reset and kept")
	}
}
