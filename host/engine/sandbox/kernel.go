package sandbox

import (
	"context"
	"fmt"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
)

// The Extism kernel is a wasm module of its own, one instance per plugin
// instance, that holds the input, the output and the guest's allocations.
// A guest reaches it through extism's "extism:host/env" host module, whose
// Go functions call the kernel's export of the same name — looking it up
// with ExportedFunction on every call, and wazero makes a new call engine
// with a 10 KiB stack for each lookup. A trivial echo makes about ten such
// calls; they were the largest share of a worker's CPU after the guest.
//
// So before compiling, a module's imports of those forwarding functions
// are redirected (redirectKernelImports) to kernelModule, whose functions
// do exactly what extism's do — call the kernel's export with the guest's
// arguments — through call engines kept per plugin instance (in its
// callGuard). The functions extism implements in Go (load_u64, store_u64,
// input_load_u64, logging, config, vars) stay extism's.

// kernelModule is the host module of the redirected imports. Guests may
// not import it themselves: it is not in allowedImports.
const kernelModule = "toolhost:kernel"

// kernelForward is one kernel export that extism's env module forwards.
type kernelForward struct {
	name            string
	params, results []extism.ValueType
}

var (
	i64 = extism.ValueTypeI64
	i32 = extism.ValueTypeI32
)

// kernelForwards lists them with the signatures extism's env module gives
// them (go-sdk host.go, instantiateEnvModule: its extismFunc calls).
var kernelForwards = []kernelForward{
	{"alloc", []extism.ValueType{i64}, []extism.ValueType{i64}},
	{"free", []extism.ValueType{i64}, nil},
	{"load_u8", []extism.ValueType{i64}, []extism.ValueType{i32}},
	{"input_load_u8", []extism.ValueType{i64}, []extism.ValueType{i32}},
	{"store_u8", []extism.ValueType{i64, i32}, nil},
	{"input_set", []extism.ValueType{i64, i64}, nil},
	{"output_set", []extism.ValueType{i64, i64}, nil},
	{"input_length", nil, []extism.ValueType{i64}},
	{"input_offset", nil, []extism.ValueType{i64}},
	{"output_length", nil, []extism.ValueType{i64}},
	{"output_offset", nil, []extism.ValueType{i64}},
	{"length", []extism.ValueType{i64}, []extism.ValueType{i64}},
	{"length_unsafe", []extism.ValueType{i64}, []extism.ValueType{i64}},
	{"reset", nil, nil},
	{"error_set", []extism.ValueType{i64}, nil},
	{"error_get", nil, []extism.ValueType{i64}},
	{"memory_bytes", nil, []extism.ValueType{i64}},
}

// kernelIndex maps a forwarded name to its index in kernelForwards.
var kernelIndex = func() map[string]int {
	m := make(map[string]int, len(kernelForwards))
	for i, k := range kernelForwards {
		m[k.name] = i
	}
	return m
}()

// kernelFns are the call engines of one plugin instance's kernel, by
// index in kernelForwards, each made on first use.
type kernelFns struct {
	kernel api.Module
	fns    []api.Function
}

func newKernelFns(kernel api.Module) *kernelFns {
	return &kernelFns{kernel: kernel, fns: make([]api.Function, len(kernelForwards))}
}

// get returns the call engine of the i-th forwarded export.
func (k *kernelFns) get(i int) (api.Function, error) {
	if f := k.fns[i]; f != nil {
		return f, nil
	}
	f := k.kernel.ExportedFunction(kernelForwards[i].name)
	if f == nil {
		return nil, fmt.Errorf("function %q not found in the Extism kernel", kernelForwards[i].name)
	}
	k.fns[i] = f
	return f, nil
}

// kernelFunctions are the host functions of kernelModule.
func kernelFunctions() []extism.HostFunction {
	hfs := make([]extism.HostFunction, len(kernelForwards))
	for i, k := range kernelForwards {
		hfs[i] = extism.NewHostFunctionWithStack(k.name, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			if err := kernelFunction(ctx, i).CallWithStack(ctx, stack); err != nil {
				panic(err) // as extism's env module does: the guest traps
			}
		}, k.params, k.results)
		hfs[i].SetNamespace(kernelModule)
	}
	return hfs
}

// kernelFunction is the call engine of the i-th forwarded export of the
// calling instance's kernel, made on first use and kept in its callGuard
// (an instance runs one call at a time, and a kernel export never calls
// back into the host, so an engine is never entered twice at once).
func kernelFunction(ctx context.Context, i int) api.Function {
	kernel, ok := ctx.Value(extism.PluginCtxKey("extism")).(api.Module)
	if !ok {
		panic("toolhost: the Extism kernel is not in the call's context")
	}
	var k *kernelFns
	if g := guardOf(ctx); g != nil {
		if g.kfns == nil || g.kfns.kernel != kernel {
			g.kfns = newKernelFns(kernel)
		}
		k = g.kfns
	} else {
		k = newKernelFns(kernel) // no guard: not kept
	}
	f, err := k.get(i)
	if err != nil {
		panic(err) // as extism's env module does: the guest traps
	}
	return f
}

// redirectKernelImports returns wasm with its function imports of the
// forwarded kernel functions from "extism:host/env" taken from
// kernelModule instead, and everything else byte for byte; wasm itself
// when it imports none, or when it cannot be read (it has been verified:
// compiling it then reports the problem).
func redirectKernelImports(wasm []byte) []byte {
	if len(wasm) < 8 {
		return wasm
	}
	out := append([]byte(nil), wasm[:8]...)
	changed := false
	for r := (wr{b: wasm, pos: 8}); r.pos < len(r.b); {
		id := r.byte()
		body := r.take(int(r.u32()))
		if r.err != nil {
			return wasm
		}
		if id == 2 {
			nb, n, err := redirectImportSection(body)
			if err != nil {
				return wasm
			}
			if n > 0 {
				body, changed = nb, true
			}
		}
		out = append(out, id)
		out = uleb(out, uint32(len(body)))
		out = append(out, body...)
	}
	if !changed {
		return wasm
	}
	return out
}

// redirectImportSection rewrites an import section's body; n is how many
// imports it redirected.
func redirectImportSection(b []byte) (out []byte, n int, err error) {
	r := wr{b: b}
	count := r.u32()
	out = uleb(nil, count)
	for ; count > 0 && r.err == nil; count-- {
		start := r.pos
		module, name := r.name(), r.name()
		desc := r.pos
		kind := r.importDesc()
		if r.err != nil {
			break
		}
		if _, fwd := kernelIndex[name]; fwd && module == envModule && kind == 0 {
			out = uleb(out, uint32(len(kernelModule)))
			out = append(out, kernelModule...)
			out = uleb(out, uint32(len(name)))
			out = append(out, name...)
			out = append(out, b[desc:r.pos]...)
			n++
			continue
		}
		out = append(out, b[start:r.pos]...)
	}
	if r.err == nil && r.pos != len(b) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, 0, fmt.Errorf("import section: %w", r.err)
	}
	return out, n, nil
}
