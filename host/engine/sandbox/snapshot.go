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
func capture(a *imageAllocator, mod api.Module, names []string) (*snapshotState, error) {
	if a.err != nil {
		return nil, a.err
	}
	s := &snapshotState{mems: a.mems}
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
	if f.next != nil {
		return f.next.NewFunctionListener(def)
	}
	return nil
}

type moduleSlotKey struct{}

type initListener struct{}

func (initListener) Before(ctx context.Context, mod api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	if slot, ok := ctx.Value(moduleSlotKey{}).(*api.Module); ok {
		*slot = mod
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
type resettable struct {
	p     *extism.Plugin
	state *snapshotState
}

// newResettable instantiates cp, compiled from prep.wasm with
// snapshotListeners, on image-backed memories of limit bytes each, runs
// the init export and captures the result; memories of up to copyMax
// bytes are restored by copying (see image). limit must be at least every
// memory's declared minimum (Prevalidate holds those to the page limit):
// wazero panics when the initial allocation is refused.
func newResettable(ctx context.Context, cp *extism.CompiledPlugin, prep *prepared, limit, copyMax uint64, cfg extism.PluginInstanceConfig) (*resettable, error) {
	alloc := &imageAllocator{limit: limit, copyMax: copyMax}
	ctx = experimental.WithMemoryAllocator(ctx, alloc)
	p, err := cp.Instance(ctx, cfg)
	if err != nil {
		for _, m := range alloc.mems {
			m.Free()
		}
		return nil, err
	}
	var mod api.Module
	rc, _, err := p.CallWithContext(context.WithValue(ctx, moduleSlotKey{}, &mod), initExport, nil)
	if err == nil && rc != 0 {
		err = fmt.Errorf("the init export returned %d", rc)
	}
	if err == nil && mod == nil {
		err = errors.New("the init export ran unobserved")
	}
	var state *snapshotState
	if err == nil {
		state, err = capture(alloc, mod, prep.globals)
	}
	if err != nil {
		p.Close(context.Background())
		return nil, fmt.Errorf("sandbox: snapshot after initialization: %w", err)
	}
	return &resettable{p: p, state: state}, nil
}

// reset makes the instance fresh again. After an error the instance must
// be closed, not used.
func (r *resettable) reset() error {
	if err := r.state.restore(); err != nil {
		return err
	}
	clear(r.p.Var)
	return nil
}
