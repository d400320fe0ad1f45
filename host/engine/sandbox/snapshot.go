package sandbox

import (
	"fmt"

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
