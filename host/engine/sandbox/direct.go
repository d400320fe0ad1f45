package sandbox

import (
	"context"
	"errors"
	"fmt"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// directCall calls a resettable instance's exports as extism's
// Plugin.CallWithContext does — set the input in the kernel, call the
// export with the kernel, the plugin and the input's offset in the
// context, then read the kernel's error and output — but through call
// engines kept for the instance: extism looks each of the six kernel
// functions and the export up with ExportedFunction on every call, and
// each lookup makes a call engine with a new 10 KiB stack (see kernel.go).
// It needs the main module and the kernel, which extism does not expose;
// newResettable captures them while the init export runs. The guest
// runtime's initialization, which CallWithContext does before the first
// export, ran then too.
type directCall struct {
	p       *extism.Plugin
	main    api.Module
	k       *kernelFns
	mem     api.Memory // the kernel's
	exports map[string]directExport
	// returned: the last call's export returned normally (no trap, no
	// WASI exit), whatever it reported.
	returned bool
}

// directExport is an export as a call needs it: nil when it does not have
// the () -> (i32) or () -> () shape of an Extism export (extism's own path
// then reports it); result when it returns its code.
type directExport struct {
	f      api.Function
	result bool
}

func newDirectCall(p *extism.Plugin, main, kernel api.Module) *directCall {
	return &directCall{p: p, main: main, k: newKernelFns(kernel), mem: kernel.ExportedMemory("memory"),
		exports: map[string]directExport{}}
}

// kernelCall calls the kernel's export name with stack (its parameters,
// then its results).
func (d *directCall) kernelCall(ctx context.Context, name string, stack []uint64) error {
	f, err := d.k.get(kernelIndex[name])
	if err != nil {
		return err
	}
	return f.CallWithStack(ctx, stack)
}

func (d *directCall) call(ctx context.Context, name string, input []byte) (uint32, []byte, error) {
	d.returned = false
	e, ok := d.exports[name]
	if !ok {
		if f := d.main.ExportedFunction(name); f != nil {
			def := f.Definition()
			if len(def.ParamTypes()) == 0 && len(def.ResultTypes()) <= 1 {
				e = directExport{f: f, result: len(def.ResultTypes()) == 1}
			}
		}
		d.exports[name] = e
	}
	f := e.f
	if f == nil || d.main.IsClosed() {
		// Missing or unusable: extism's own path gives its own error.
		return d.p.CallWithContext(ctx, name, input)
	}
	ctx = context.WithValue(ctx, extism.PluginCtxKey("extism"), d.k.kernel)
	ctx = context.WithValue(ctx, extism.PluginCtxKey("plugin"), d.p)

	// The input, as Plugin.SetInput sets it (outside the call's context).
	var st [2]uint64
	bg := context.Background()
	if err := d.kernelCall(bg, "reset", st[:]); err != nil {
		return 1, nil, fmt.Errorf("the Extism kernel could not be reset for the input: %v", err)
	}
	st[0] = uint64(len(input))
	if err := d.kernelCall(bg, "alloc", st[:]); err != nil {
		return 1, nil, err
	}
	offset := st[0]
	d.mem.Write(uint32(offset), input) // extism ignores a failure too (callGuard records it)
	st[0], st[1] = offset, uint64(len(input))
	d.kernelCall(bg, "input_set", st[:]) // extism ignores its error too
	ctx = context.WithValue(ctx, extism.InputOffsetKey("inputOffset"), offset)

	// The call and its return code, as CallWithContext reads them.
	var stack [1]uint64
	var res []uint64
	err := f.CallWithStack(ctx, stack[:])
	d.returned = err == nil
	if err == nil && e.result {
		res = stack[:]
	}
	if exit, ok := err.(*sys.ExitError); ok {
		if exit.ExitCode() == 0 {
			err = nil
		}
		if len(res) == 0 {
			res = []uint64{api.EncodeU32(exit.ExitCode())}
		}
	}
	var rc uint32
	switch {
	case len(res) > 0:
		rc = api.DecodeU32(res[0])
	case err != nil:
		rc = 1
	}
	if err != nil {
		return rc, nil, err
	}

	var returnErr error
	if msg := d.errorMessage(ctx); msg != "" {
		returnErr = &guestError{msg}
	}
	if err := d.kernelCall(ctx, "output_offset", st[:1]); err != nil {
		return rc, nil, errors.Join(returnErr, fmt.Errorf("failed to get output: %v", err))
	}
	off := st[0]
	if err := d.kernelCall(ctx, "output_length", st[:1]); err != nil {
		return rc, nil, errors.Join(returnErr, fmt.Errorf("failed to get output: %v", err))
	}
	mem, _ := d.mem.Read(uint32(off), uint32(st[0]))
	return rc, append([]byte{}, mem...), returnErr
}

// errorMessage is the error the guest set in the kernel, "" if none.
func (d *directCall) errorMessage(ctx context.Context) string {
	var st [1]uint64
	if d.kernelCall(ctx, "error_get", st[:]) != nil || st[0] == 0 {
		return ""
	}
	off := st[0]
	if d.kernelCall(ctx, "length", st[:]) != nil {
		return ""
	}
	mem, _ := d.mem.Read(uint32(off), uint32(st[0]))
	return string(mem)
}
