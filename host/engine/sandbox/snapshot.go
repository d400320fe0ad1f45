package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// imageAllocator gives every linear memory of an instance an image of
// limit bytes and keeps them, so the instance can be snapshotted and
// reset. It is an experimental.MemoryAllocator.
type imageAllocator struct {
	limit   uint64
	copyMax uint64 // see newImage; 0 restores every memory by discarding pages
	mems    []*image
	err     error // the first reservation that failed
}

// Allocate implements experimental.MemoryAllocator; a memory that cannot
// be reserved is refused (wazero then fails the instantiation).
func (a *imageAllocator) Allocate(_, _ uint64) experimental.LinearMemory {
	im, err := newImage(a.limit, a.copyMax)
	if err != nil {
		if a.err == nil {
			a.err = err
		}
		im = &image{fd: -1} // Reallocate refuses every size
	}
	a.mems = append(a.mems, im)
	return im
}

// images implements imageSource.
func (a *imageAllocator) images() ([]*image, error) { return a.mems, a.err }

// imageSource is a memory allocator whose memories are images: an
// imageAllocator, or a callGuard.
type imageSource interface {
	experimental.MemoryAllocator
	images() ([]*image, error)
}

// snapshotState is what makes a used instance fresh again: the images of
// its memories and the values of its mutable globals (exported under
// reserved names by prepareForSnapshot) at the moment of the snapshot.
type snapshotState struct {
	mems    []*image
	globals []api.MutableGlobal
	values  []uint64
}

// capture snapshots the memories a allocated and the globals of mod named
// in names. Every mutable global must be reachable: one that is not
// exported, or not mutable, fails the capture.
func capture(a imageSource, mod api.Module, names []string) (*snapshotState, error) {
	mems, err := a.images()
	if err != nil {
		return nil, err
	}
	s := &snapshotState{mems: mems}
	for _, name := range names {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return nil, fmt.Errorf("sandbox: global %s is not exported as mutable", name)
		}
		s.globals = append(s.globals, g)
		s.values = append(s.values, g.Get())
	}
	for _, m := range s.mems {
		if err := m.snapshot(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// restore puts memories and globals back as they were at capture. On an
// error (a memory grew), the instance must be thrown away: part of it may
// already be restored, the rest not.
func (s *snapshotState) restore() error {
	for _, m := range s.mems {
		if err := m.reset(); err != nil {
			return err
		}
	}
	for i, g := range s.globals {
		g.Set(s.values[i])
	}
	return nil
}

// snapshotListeners adds, to the listeners of next, one on the reserved
// init export of a prepared module: extism does not expose the main
// module's api.Module, and this is how capture gets it. Only init calls
// made by newResettable carry the slot the listener fills.
type snapshotListeners struct {
	next experimental.FunctionListenerFactory
}

func (f snapshotListeners) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	if def.GoFunction() == nil && slices.Contains(def.ExportNames(), initExport) {
		return initListener{}
	}
	if def.ModuleName() == wasiModule && def.GoFunction() != nil && len(def.ExportNames()) > 0 && !wasiStateless[def.ExportNames()[0]] {
		return taintListener{next: f.nextListener(def), initOK: wasiInitOK[def.ExportNames()[0]]}
	}
	return f.nextListener(def)
}

func (f snapshotListeners) nextListener(def api.FunctionDefinition) experimental.FunctionListener {
	if f.next != nil {
		return f.next.NewFunctionListener(def)
	}
	return nil
}

const wasiModule = "wasi_snapshot_preview1"

// wasiStateless are the WASI functions that leave nothing behind in the
// host's per-instance WASI state (the descriptor table, offsets, flags,
// the file system). A call that uses any other taints its instance, which
// is then closed instead of reset (fd_readdir too: wazero keeps a
// directory cursor per descriptor). stdin is empty and stdout discarded;
// stderr is the instance's capped buffer, which the engine clears.
var wasiStateless = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_res_get": true, "clock_time_get": true, "random_get": true, "sched_yield": true, "poll_oneoff": true,
	"fd_write": true, "fd_read": true, "fd_pread": true,
	"fd_fdstat_get": true, "fd_filestat_get": true, "fd_prestat_get": true, "fd_prestat_dir_name": true,
	"path_filestat_get": true, "path_readlink": true,
}

// wasiInitOK are the WASI functions outside wasiStateless that an
// instance's initialization may call and still be snapshotted: Go's
// wasip1 runtime sets the flags of stdin, stdout and stderr when it
// starts. What they change is the same in every instance, and a call that
// changes it again taints its instance. Every other one (path_open above
// all: a descriptor opened then has an offset that fd_read, stateless for
// stdio, moves from call to call) makes the module's instances plain
// fresh ones.
var wasiInitOK = map[string]bool{"fd_fdstat_set_flags": true}

// taintKey holds the *bool a call's WASI use taints; initTaintKey the
// *bool an instance's initialization taints.
type (
	taintKey     struct{}
	initTaintKey struct{}
)

// taintListener marks the call's instance as not resettable (or, during
// its initialization, as not to be snapshotted, unless initOK), then runs
// the listener it wraps (if any).
type taintListener struct {
	next   experimental.FunctionListener
	initOK bool
}

func (l taintListener) Before(ctx context.Context, mod api.Module, def api.FunctionDefinition, params []uint64, si experimental.StackIterator) {
	if tainted, ok := ctx.Value(taintKey{}).(*bool); ok {
		*tainted = true
	}
	if tainted, ok := ctx.Value(initTaintKey{}).(*bool); ok && !l.initOK {
		*tainted = true
	}
	if l.next != nil {
		l.next.Before(ctx, mod, def, params, si)
	}
}

func (l taintListener) After(ctx context.Context, mod api.Module, def api.FunctionDefinition, results []uint64) {
	if l.next != nil {
		l.next.After(ctx, mod, def, results)
	}
}

func (l taintListener) Abort(ctx context.Context, mod api.Module, def api.FunctionDefinition, err error) {
	if l.next != nil {
		l.next.Abort(ctx, mod, def, err)
	}
}

type moduleSlotKey struct{}

// moduleSlot is where initListener puts the instance's main module and
// its Extism kernel, which extism does not expose.
type moduleSlot struct{ main, kernel api.Module }

type initListener struct{}

func (initListener) Before(ctx context.Context, mod api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	if slot, ok := ctx.Value(moduleSlotKey{}).(*moduleSlot); ok {
		slot.main = mod
		slot.kernel, _ = ctx.Value(extism.PluginCtxKey("extism")).(api.Module)
	}
}

func (initListener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}

func (initListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}

// resettable is an extism instance of a prepared module that is made
// fresh again after every call by restoring its snapshot, taken after
// instantiation and the guest runtime's initialization (a Go guest's
// runtime start is then not on any call's path): its memories (the
// module's and the Extism kernel's heap, which still holds earlier
// inputs and outputs after the kernel's own reset), the module's mutable
// globals, and extism's per-instance variables. The kernel's only
// mutable global is the context reference extism sets itself.
//
// An instance of a module whose manifest opts in to reuse is made the
// same way, for the direct call path (directCall), but not snapshotted:
// it is never reset, and state is nil.
type resettable struct {
	p       *extism.Plugin
	state   *snapshotState
	tainted bool // a call used WASI state the snapshot does not hold
	direct  *directCall
}

// newResettable instantiates cp, compiled from prep.wasm with
// snapshotListeners, on the image-backed memories of alloc, runs the init
// export and, when snapshot is set, captures the result. alloc's images
// must be at least every memory's declared minimum (Prevalidate holds
// those to the page limit): wazero panics when the initial allocation is
// refused.
func newResettable(ctx context.Context, cp *extism.CompiledPlugin, prep *prepared, alloc imageSource, cfg extism.PluginInstanceConfig, snapshot bool) (*resettable, error) {
	ctx = experimental.WithMemoryAllocator(ctx, alloc)
	// The start function and the guest runtime's initialization are
	// watched too: WASI state they leave (a descriptor opened or
	// renumbered) is in no snapshot, and calls could then change it with
	// functions that are otherwise stateless (fd_read moves the offset of
	// a file the start function opened). See wasiInitOK.
	var initTainted bool
	ctx = context.WithValue(ctx, initTaintKey{}, &initTainted)
	p, err := cp.Instance(ctx, cfg)
	if err != nil {
		mems, _ := alloc.images()
		for _, m := range mems {
			m.Free()
		}
		return nil, err
	}
	if g, ok := alloc.(*callGuard); ok {
		// Before the init export runs: it may log.
		p.SetLogger(g.pluginLog)
	}
	var slot moduleSlot
	rc, _, err := p.CallWithContext(context.WithValue(ctx, moduleSlotKey{}, &slot), initExport, nil)
	if err == nil && rc != 0 {
		err = fmt.Errorf("the init export returned %d", rc)
	}
	if err == nil && slot.main == nil {
		err = errors.New("the init export ran unobserved")
	}
	var state *snapshotState
	if err == nil && snapshot && initTainted {
		err = errInitTainted
	}
	if err == nil && snapshot {
		state, err = capture(alloc, slot.main, prep.globals)
	}
	if err != nil {
		p.Close(context.Background())
		return nil, fmt.Errorf("sandbox: snapshot after initialization: %w", err)
	}
	r := &resettable{p: p, state: state}
	if slot.kernel != nil && slot.kernel.ExportedMemory("memory") != nil {
		r.direct = newDirectCall(p, slot.main, slot.kernel)
	}
	return r, nil
}

// errInitTainted: the module's start function or its runtime's
// initialization used WASI state a snapshot does not hold, so its
// instances cannot be made fresh by a reset.
var errInitTainted = errors.New("the module's initialization changed WASI state (descriptors or offsets) that a snapshot cannot restore")

// call runs export with input, watching for WASI calls that would make
// the instance impossible to reset.
func (r *resettable) call(ctx context.Context, export string, input []byte) (uint32, []byte, error) {
	ctx = context.WithValue(ctx, taintKey{}, &r.tainted)
	if r.direct != nil {
		return r.direct.call(ctx, export, input)
	}
	return r.p.CallWithContext(ctx, export, input)
}

// returned reports whether the last call's export returned normally
// (known only on the direct path).
func (r *resettable) returned() bool { return r.direct != nil && r.direct.returned }

// reset makes the instance fresh again. After an error the instance must
// be closed, not used.
func (r *resettable) reset() error {
	if r.state == nil {
		return errors.New("sandbox: an instance made for reuse has no snapshot to reset to")
	}
	if r.tainted {
		return errors.New("sandbox: the call changed WASI state (descriptors, offsets or files) that a snapshot cannot restore")
	}
	if err := r.state.restore(); err != nil {
		return err
	}
	clear(r.p.Var)
	return nil
}
