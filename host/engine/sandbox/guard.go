package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/toolhost/toolhost/host/engine"
)

type guardKey struct{}

// callGuard watches one call from the host's side of the sandbox: it is the
// wazero memory allocator of the call's instances (enforcing the page limit
// and recording every refused memory.grow, of the guest and of the Extism
// kernel alike) and the state of the listeners on the Extism host
// functions (allocations that failed, the output range the guest asked
// for, offsets outside memory). It is used by one goroutine only: wasm,
// host functions and listeners run on the goroutine that made the call.
type callGuard struct {
	memLimit uint64 // bytes, per linear memory
	inputLen uint64

	refusedGrow uint64 // largest memory size refused, in bytes
	failedAlloc uint64 // largest Extism allocation that failed, in bytes
	pendingSize uint64 // the size of the alloc in progress

	outputSet    bool
	outputOffset uint64
	outputLen    uint64

	mems         []*linearMemory // every memory of the call's instance
	envCalls     int             // listened host-function calls so far
	inputRefused bool            // the kernel could not take the input

	kernel    api.Memory // the Extism kernel's memory, once looked up
	kfns      *kernelFns // the kernel's call engines (kernel.go)
	badAccess string     // the first out-of-range host-function access

	events *callEvents // the call's event relay; nil: nobody listens
	inLog  bool        // the guest is inside an Extism log_* function
}

// reset clears what one call recorded, for an instance that is reused.
func (g *callGuard) reset() {
	*g = callGuard{memLimit: g.memLimit, mems: g.mems, kernel: g.kernel, kfns: g.kfns}
}

func newCallGuard(spec engine.Spec, inputLen int) *callGuard {
	return &callGuard{memLimit: uint64(spec.Limits.MemoryPages) * 65536, inputLen: uint64(inputLen)}
}

func guardOf(ctx context.Context) *callGuard {
	g, _ := ctx.Value(guardKey{}).(*callGuard)
	return g
}

// exhausted reports whether the call ran into its memory limit.
func (g *callGuard) exhausted() bool { return g.refusedGrow > 0 || g.failedAlloc > 0 }

func (g *callGuard) exhaustion() string {
	if g.failedAlloc > 0 {
		return fmt.Sprintf("an allocation of %d bytes failed", g.failedAlloc)
	}
	return fmt.Sprintf("growing a memory to %d bytes was refused", g.refusedGrow)
}

// Allocate implements experimental.MemoryAllocator. Every memory is an
// image reserved up to the page limit (so that the instance can be
// snapshotted and reset); when the reservation fails, the memory is a Go
// slice as in wazero's default, and the instance cannot be reset.
func (g *callGuard) Allocate(capBytes, _ uint64) experimental.LinearMemory {
	l := &linearMemory{g: g}
	if im, err := newImage(max(g.memLimit, capBytes), defaultCopyMax); err == nil {
		l.im = im
	}
	g.mems = append(g.mems, l)
	return l
}

// images implements imageSource: the images of the instance's memories,
// or an error when one of them is not an image.
func (g *callGuard) images() ([]*image, error) {
	ims := make([]*image, 0, len(g.mems))
	var err error
	for _, l := range g.mems {
		if l.im == nil {
			err = errors.New("sandbox: a linear memory could not be reserved as an image (address space)")
			continue
		}
		ims = append(ims, l.im)
	}
	return ims, err
}

// findKernel marks which of the instance's memories is the Extism
// kernel's (kernel is the memory extism reads input and output from).
func (g *callGuard) findKernel(kernel api.Memory) {
	if kernel == nil {
		return
	}
	kb, ok := kernel.Read(0, 1)
	if !ok {
		return
	}
	for _, l := range g.mems {
		if len(l.buf) > 0 && &l.buf[0] == &kb[0] {
			l.kernel = true
		}
	}
}

// linearMemory backs one wasm memory with an image (or, when none could
// be reserved, a Go slice as wazero does by default), but refuses to grow
// past the call's page limit. wazero's own limit is the whole wasm32
// space, so every refusal within it passes here.
type linearMemory struct {
	g       *callGuard
	im      *image // nil: buf is a Go slice
	buf     []byte
	started bool
	kernel  bool
}

func (l *linearMemory) Reallocate(size uint64) []byte {
	// The first call sizes the memory to its declared minimum, which
	// Prevalidate has already held to the limit; wazero requires it.
	if size > l.g.memLimit && l.started {
		l.g.refusedGrow = max(l.g.refusedGrow, size)
		if l.kernel && l.g.envCalls == 0 {
			// Before the export has called any host function, the
			// kernel only allocates the input.
			l.g.inputRefused = true
		}
		return nil
	}
	l.started = true
	if l.im != nil {
		l.buf = l.im.Reallocate(size)
		return l.buf
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
		return l.buf
	}
	c := max(size, min(2*uint64(cap(l.buf)), l.g.memLimit))
	b := make([]byte, size, c)
	copy(b, l.buf)
	l.buf = b
	return b
}

func (l *linearMemory) Free() {
	if l.im != nil {
		l.im.Free()
	}
	l.buf = nil
}

// envListeners attaches listeners to the Extism host functions whose
// misuse the kernel answers silently: it ignores an out-of-range
// store_u8 or output_set and answers 0 to a load, a length or an
// allocation it cannot serve, so a plugin bug would look like a success.
type envListeners struct{}

const envModule = "extism:host/env"

func (envListeners) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	// Only extism's Go host functions and those of kernelModule, which
	// stand in for them: a guest module can take any module name, but not
	// be a Go function.
	if (def.ModuleName() != envModule && def.ModuleName() != kernelModule) || def.GoFunction() == nil || len(def.ExportNames()) == 0 {
		return nil
	}
	switch name := def.ExportNames()[0]; name {
	case "alloc", "output_set", "store_u8", "load_u8", "store_u64", "load_u64",
		"input_load_u8", "input_load_u64", "length", "length_unsafe", "free",
		"log_trace", "log_debug", "log_info", "log_warn", "log_error":
		return envListener{name: name}
	}
	return nil
}

type envListener struct{ name string }

func (l envListener) Before(ctx context.Context, _ api.Module, _ api.FunctionDefinition, params []uint64, _ experimental.StackIterator) {
	g := guardOf(ctx)
	if g == nil || len(params) == 0 {
		return
	}
	g.envCalls++
	off := params[0]
	switch l.name {
	case "alloc":
		g.pendingSize = off
	case "output_set":
		g.outputSet, g.outputOffset, g.outputLen = true, off, params[1]
	case "store_u8", "load_u8", "length", "length_unsafe", "free":
		g.checkOffset(ctx, l.name, off, 1)
	case "store_u64", "load_u64":
		g.checkOffset(ctx, l.name, off, 8)
	case "input_load_u8", "input_load_u64":
		if off >= g.inputLen && g.badAccess == "" {
			g.badAccess = fmt.Sprintf("read past the end of its input with %s (offset %#x, the input is %d bytes)", l.name, off, g.inputLen)
		}
	case "log_trace", "log_debug", "log_info", "log_warn", "log_error":
		// Lines reaching the logger now are the guest's (pluginLog).
		g.inLog = true
	}
}

func (l envListener) After(ctx context.Context, _ api.Module, _ api.FunctionDefinition, results []uint64) {
	g := guardOf(ctx)
	if g == nil {
		return
	}
	switch l.name {
	case "alloc":
		if len(results) == 1 && results[0] == 0 && g.pendingSize > 0 {
			g.failedAlloc = max(g.failedAlloc, g.pendingSize)
		}
	case "log_trace", "log_debug", "log_info", "log_warn", "log_error":
		g.inLog = false
	}
}

func (envListener) Abort(ctx context.Context, _ api.Module, _ api.FunctionDefinition, _ error) {
	if g := guardOf(ctx); g != nil {
		g.inLog = false
	}
}

// checkOffset records an access of n bytes at off that is not inside the
// kernel's memory.
func (g *callGuard) checkOffset(ctx context.Context, fn string, off, n uint64) {
	if g.badAccess != "" {
		return
	}
	if g.kernel == nil {
		p, ok := ctx.Value(extism.PluginCtxKey("plugin")).(*extism.Plugin)
		if !ok {
			return
		}
		g.kernel = p.Memory()
		if g.kernel == nil {
			return
		}
	}
	size := uint64(g.kernel.Size())
	if off > math.MaxUint32 || off+n > size {
		g.badAccess = fmt.Sprintf("passed an offset outside its memory to %s (%#x; the memory is %d bytes)", fn, off, size)
	}
}
