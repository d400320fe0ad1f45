// Package bench measures one trivial tool call (the arguments JSON in, the
// same bytes out) through every layer, side by side in one run:
//
//	native Go → raw wazero → extism go-sdk → toolhost in-process →
//	toolhost with worker isolation (the default)
//
// and test/e2e's BenchmarkHTTPTrivialTool adds the HTTP API. Run with
// `make bench` or `go test -run '^$' -bench . ./test/bench/`.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/engine/worker"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

var input = []byte(`{"query":"weather in Paris","units":"metric","days":3,"lang":"en"}`)

func TestMain(m *testing.M) {
	// Worker processes re-execute this test binary.
	if len(os.Args) > 2 && os.Args[1] == "sandbox-worker" {
		os.Exit(worker.Main(os.Args[2]))
	}
	os.Exit(m.Run())
}

func echoWasm(b *testing.B) []byte {
	root, err := testplugins.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join(root, "host", "testdata", "echo", "echo.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	return wasm
}

//go:noinline
func nativeEcho(in []byte) []byte {
	if !json.Valid(in) {
		return nil
	}
	return bytes.Clone(in)
}

func BenchmarkNativeGo(b *testing.B) {
	for b.Loop() {
		if out := nativeEcho(input); len(out) != len(input) {
			b.Fatal("wrong output")
		}
	}
}

func BenchmarkRawWazero(b *testing.B) {
	ctx := context.Background()
	wasm, err := os.ReadFile("testdata/raw.wasm")
	if err != nil {
		b.Fatal(err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, fresh bool) {
		mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			b.Fatal(err)
		}
		fn := mod.ExportedFunction("echo")
		stack := make([]uint64, 1)
		for b.Loop() {
			if fresh {
				mod.Close(ctx)
				if mod, err = rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("")); err != nil {
					b.Fatal(err)
				}
				fn = mod.ExportedFunction("echo")
			}
			mod.Memory().Write(0, input)
			stack[0] = uint64(len(input))
			if err := fn.CallWithStack(ctx, stack); err != nil {
				b.Fatal(err)
			}
			out, _ := mod.Memory().Read(65536, uint32(stack[0]))
			if len(bytes.Clone(out)) != len(input) {
				b.Fatal("wrong output")
			}
		}
		mod.Close(ctx)
	}
	b.Run("warm-instance", func(b *testing.B) { run(b, false) })
	b.Run("fresh-instance", func(b *testing.B) { run(b, true) })
}

func BenchmarkExtismDirect(b *testing.B) {
	ctx := context.Background()
	manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: echoWasm(b)}}, Memory: &extism.ManifestMemory{MaxPages: 17}, Timeout: 1000}
	cp, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{EnableWasi: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close(ctx)
	b.Run("warm-instance", func(b *testing.B) {
		inst, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer inst.Close(ctx)
		for b.Loop() {
			if _, out, err := inst.Call("echo", input); err != nil || len(out) != len(input) {
				b.Fatal(err)
			}
		}
	})
	b.Run("fresh-instance", func(b *testing.B) {
		for b.Loop() {
			inst, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
			if err != nil {
				b.Fatal(err)
			}
			if _, out, err := inst.Call("echo", input); err != nil || len(out) != len(input) {
				b.Fatal(err)
			}
			inst.Close(ctx)
		}
	})
}

// newHost installs the echo tool into a fresh store with the given engine;
// reuse sets the manifest's reuse_instances opt-in.
func newHost(b *testing.B, engine engine.Engine, reuse bool) *host.Host {
	st, err := store.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	h, err := host.New(host.Options{Store: st, Engine: engine, AllowUnsigned: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	manifest := fmt.Appendf(nil, `{"name": "echo", "version": "1.0.0", "description": "Trivial tool", "wasm": "echo.wasm",
 "tools": [{"name": "echo", "description": "Returns its arguments", "parameters": {"type": "object"}}],
 "limits": {"memory_pages": 17, "timeout_ms": 1000, "max_output_bytes": 4096}, "reuse_instances": %t}`, reuse)
	bundle, err := plugin.NewBundle(manifest, echoWasm(b))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.Install(context.Background(), bundle, host.InstallOptions{}); err != nil {
		b.Fatal(err)
	}
	return h
}

// benchCalls measures the echo tool with a fresh instance per call (the
// default) and with the manifest's reuse_instances opt-in.
func benchCalls(b *testing.B, engine engine.Engine) {
	b.Run("fresh", func(b *testing.B) { benchHost(b, newHost(b, engine, false)) })
	b.Run("reuse", func(b *testing.B) { benchHost(b, newHost(b, engine, true)) })
}

func benchHost(b *testing.B, h *host.Host) {
	ctx := context.Background()
	for range 20 {
		if _, err := h.Call(ctx, "echo", input); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if out, err := h.Call(ctx, "echo", input); err != nil || len(out) != len(input) {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := h.Call(ctx, "echo", input); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkToolhostInProcess(b *testing.B) {
	engine, err := sandbox.NewInProcess(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer engine.Close(context.Background())
	benchCalls(b, engine)
}

func BenchmarkToolhostWorkers(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	pool, err := worker.NewPool(context.Background(), worker.Options{Command: []string{exe, "sandbox-worker", b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close(context.Background())
	benchCalls(b, pool)
}
