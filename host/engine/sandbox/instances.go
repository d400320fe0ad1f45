package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
)

type inProcessModule struct {
	engine   *InProcess
	spec     engine.Spec
	compiled *extism.CompiledPlugin
	// prep, when not nil, is the module compiled prepared for snapshots:
	// fresh calls then run on resettable instances.
	prep *prepared
	// initTainted: an instance's initialization left WASI state no
	// snapshot holds (errInitTainted); instances are then plain ones.
	initTainted atomic.Bool
	files       *readOnlyFiles
	// closeMu orders Close after the calls and refills in flight: they
	// hold it for reading while they use compiled, files and ready; Close
	// takes it for writing to set closed and release them. So Close waits
	// for the calls running in this process, which end at their deadline.
	closeMu sync.RWMutex
	closed  bool

	// ready holds instances made ahead of calls. Without ReuseInstances an
	// instance in ready has never run a call: making the next one right
	// after a call takes instantiation off the next call's path. With
	// ReuseInstances, instances that ended a call cleanly go back here.
	ready chan *instance
	// filling is held by the one background refill at a time (TryLock:
	// a call never waits for it).
	filling sync.Mutex
}

// instance is one instantiation of the module with the guard and stderr
// buffer bound to it when it was made. An instance is owned by whoever
// holds it: the ready channel, or the one call that took it (an extism
// Plugin is not safe for concurrent use).
type instance struct {
	p      *extism.Plugin
	r      *resettable // nil: the instance cannot be reset
	g      *callGuard
	stderr *cappedBuffer
}

// call runs export on the instance.
func (in *instance) call(ctx context.Context, export string, input []byte) (uint32, []byte, error) {
	if in.r != nil {
		return in.r.call(ctx, export, input)
	}
	rc, out, err := in.p.CallWithContext(ctx, export, input)
	// extism returns the guest's error_set message as a plain error, and
	// only when the export returned normally: an error that reads exactly
	// like the message still in the kernel is that one (a guest that set
	// the text of the trap it then causes gets its own words back).
	if err != nil && err.Error() == in.p.GetError() {
		err = &guestError{err.Error()}
	}
	return rc, out, err
}

func (m *inProcessModule) Close(ctx context.Context) error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.drain()
	m.engine.forget(m)
	m.files.close()
	return m.compiled.Close(ctx)
}

// cappedBuffer keeps the first n bytes written to it.
type cappedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.n - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// reset empties the buffer.
func (c *cappedBuffer) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Reset()
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func (m *inProcessModule) moduleConfig(stderr *cappedBuffer) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader).
		WithStderr(stderr).
		WithFSConfig(m.files.cfg)
}

// firstInstance instantiates the module once, so that a module that
// compiles but cannot instantiate is refused now; the instance, which has
// run no call, is kept for the first call.
//
// Instantiating runs the module's start function. It gets the tool's
// timeout: an instantiation that takes longer could never serve a call
// (every fresh call instantiates). When ctx ends first (a call's deadline:
// the host compiles on a plugin's first call; or its caller went away), it
// is that call's timeout or cancellation, not a fault of the module.
func (m *inProcessModule) firstInstance(ctx context.Context) error {
	ictx, cancel := engine.Budget(ctx, m.spec.Limits.TimeoutMS)
	defer cancel()
	in, err := m.newInstance(ictx)
	if err != nil {
		if stopped := engine.Stopped(ctx, "the module was being instantiated"); stopped != nil {
			return stopped
		}
		if ictx.Err() != nil {
			return toolerr.Errorf(toolerr.CodeInvalidModule, "instantiating the module (its start function) took longer than the tool's timeout of %d ms", m.spec.Limits.TimeoutMS)
		}
		msg := strings.TrimPrefix(firstLine(err.Error()), "instantiating module: ")
		return toolerr.Errorf(toolerr.CodeInvalidModule, "the module cannot be instantiated: %s", msg)
	}
	if !m.put(in) {
		in.p.Close(context.Background())
	}
	return nil
}

// newInstance instantiates the module with a fresh guard and stderr: a
// resettable instance when the module was prepared for snapshots and its
// initialization left a state worth keeping, else a plain one.
func (m *inProcessModule) newInstance(ctx context.Context) (*instance, error) {
	if m.prep != nil && !m.initTainted.Load() {
		if in := m.newResettableInstance(ctx); in != nil {
			return in, nil
		}
	}
	in := &instance{g: newCallGuard(m.spec, 0), stderr: &cappedBuffer{n: 4096}}
	ctx = context.WithValue(ctx, guardKey{}, in.g)
	ctx = experimental.WithMemoryAllocator(ctx, in.g)
	p, err := m.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: m.moduleConfig(in.stderr)})
	if err != nil {
		return in, err
	}
	in.p = p
	p.SetLogger(in.g.pluginLog)
	in.g.findKernel(p.Memory())
	return in, nil
}

// newResettableInstance makes an instance and snapshots it after its
// initialization (not when the manifest opts in to reuse: such an
// instance is never reset; it is made this way for the direct call
// path), or returns nil when that fails or the initialization
// ran into a limit or misused a host function: a plain instance then
// meets the same on the call, where it is reported as it always was.
func (m *inProcessModule) newResettableInstance(ctx context.Context) *instance {
	in := &instance{g: newCallGuard(m.spec, 0), stderr: &cappedBuffer{n: 4096}}
	ctx = context.WithValue(ctx, guardKey{}, in.g)
	r, err := newResettable(ctx, m.compiled, m.prep, in.g, extism.PluginInstanceConfig{ModuleConfig: m.moduleConfig(in.stderr)}, !m.spec.ReuseInstances)
	if err != nil {
		if errors.Is(err, errInitTainted) {
			m.initTainted.Store(true) // every initialization does the same: stop trying
		}
		return nil
	}
	if in.g.exhausted() || in.g.badAccess != "" || in.g.inputRefused {
		r.p.Close(context.Background())
		return nil
	}
	in.p, in.r = r.p, r
	in.g.findKernel(r.p.Memory())
	in.g.reset()
	in.stderr.reset()
	return in
}

// drain closes the module's ready instances.
func (m *inProcessModule) drain() {
	for {
		select {
		case in := <-m.ready:
			in.p.Close(context.Background())
		default:
			return
		}
	}
}

// put offers an instance to the next call; it reports whether it was kept.
func (m *inProcessModule) put(in *instance) bool {
	select {
	case m.ready <- in:
		m.engine.keepWarm(m)
		return true
	default:
		return false
	}
}

// take returns a ready instance, or makes one.
func (m *inProcessModule) take(ctx context.Context) (*instance, error) {
	select {
	case in := <-m.ready:
		return in, nil
	default:
		return m.newInstance(ctx)
	}
}

// refill makes a fresh instance for the next call, in the background.
func (m *inProcessModule) refill() {
	if !m.filling.TryLock() {
		return
	}
	go func() {
		defer m.filling.Unlock()
		m.closeMu.RLock()
		defer m.closeMu.RUnlock()
		if m.closed || len(m.ready) > 0 {
			return
		}
		// Bounded like firstInstance: a start function that spins does
		// not keep a core busy in the background for long.
		ctx, cancel := engine.Budget(context.Background(), m.spec.Limits.TimeoutMS)
		defer cancel()
		in, err := m.newInstance(ctx)
		if err != nil {
			return
		}
		if !m.put(in) {
			in.p.Close(context.Background())
		}
	}()
}

// done disposes of an instance after a call. With ReuseInstances, an
// instance whose call ended cleanly goes back as it is; without, one
// whose call ended cleanly goes back once reset to its snapshot, which
// makes it fresh (see resettable). Every other instance (an error, a
// timeout, a failed reset, a full ready channel) is closed.
func (m *inProcessModule) done(in *instance, clean bool) {
	if clean && (m.spec.ReuseInstances || (in.r != nil && in.r.reset() == nil)) {
		in.g.reset()
		if !m.spec.ReuseInstances {
			in.stderr.reset()
		}
		if m.put(in) {
			return
		}
	}
	in.p.Close(context.Background())
	// A Supervised engine makes the next instance on the next call, where
	// the supervisor's watchdogs cover its start function: in the
	// background, nothing would stop one that spins.
	if !m.spec.ReuseInstances && !m.engine.Supervised {
		m.refill()
	}
}
