package worker

import (
	"context"
	"errors"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// Compile loads the module into one worker, so that a module that does not
// compile (or kills the worker while compiling) is refused now. Loading
// honours ctx: its deadline (a call's, when the host compiles on a
// plugin's first call) bounds it, and its cancellation stops it. Without a
// deadline, compiling may take up to maxCompileTime (an install).
func (p *Pool) Compile(ctx context.Context, spec engine.Spec) (engine.Module, error) {
	s := spec
	p.specs.Store(spec.Key, &s)
	err := p.compileIn(ctx, &s)
	if errors.Is(err, errNotDelivered) {
		err = p.compileIn(ctx, &s)
	}
	if err != nil {
		p.specs.Delete(spec.Key)
		return nil, toolerr.As(err)
	}
	return &module{pool: p, spec: &s}, nil
}

func (p *Pool) compileIn(ctx context.Context, spec *engine.Spec) error {
	w, err := p.acquire(ctx, spec.Name, spec.Key)
	if errors.Is(err, errNoWorker) {
		return waitError(ctx, ctx)
	}
	if err != nil {
		return err
	}
	defer p.release(w, spec.Name)
	return p.load(ctx, w, spec)
}

// maxCompileTime bounds loading (compiling and instantiating once) a module
// in a worker when ctx has no deadline.
const maxCompileTime = 2 * time.Minute

// load loads spec into w within ctx's deadline (or maxCompileTime).
func (p *Pool) load(ctx context.Context, w *proc, spec *engine.Spec) error {
	h := loadHeader{
		Key: spec.Key, Name: spec.Name, MemoryPages: spec.Limits.MemoryPages, TimeoutMS: spec.Limits.TimeoutMS,
		MaxOutput: spec.Limits.MaxOutputBytes, Hosts: spec.Permissions.AllowedHosts, Paths: spec.Permissions.AllowedPaths,
		Exports: spec.Exports, Private: spec.AllowPrivateNetwork, Reuse: spec.ReuseInstances,
		Config: spec.Config, Secrets: spec.Secrets,
	}
	// Compiling a large module can take seconds (a Go guest: ~2 s on an
	// idle core, much more on a loaded machine); a module that makes the
	// compiler run away is stopped by the same watchdogs as a call.
	kill := time.Now().Add(maxCompileTime)
	deadline, bounded := ctx.Deadline()
	if bounded {
		h.BudgetMS = budgetMS(deadline)
		kill = deadline.Add(p.opts.Grace)
	}
	rh, _, err := p.roundTrip(ctx, w, kindLoad, h, spec.Wasm, kill, time.Duration(spec.Limits.TimeoutMS)*time.Millisecond, int(plugin.MaxOutputBytes))
	if err != nil {
		switch w.killReason() {
		case killStart:
			return toolerr.Errorf(toolerr.CodeInvalidModule, "instantiating the module (its start function) took longer than the tool's timeout of %d ms", spec.Limits.TimeoutMS)
		case killPoolMemory:
			// Not the module's fault alone: the other sandboxes' memory
			// counted too. memory_limit, which the host does not keep
			// as the plugin's compile error.
			return err
		}
		switch toolerr.CodeOf(err) {
		case toolerr.CodeTimeout:
			if bounded {
				return toolerr.Errorf(toolerr.CodeTimeout, "the tool's deadline passed while its module was being loaded into a sandbox worker; it was stopped")
			}
			return toolerr.Errorf(toolerr.CodeInvalidModule, "compiling the module took too long")
		case toolerr.CodeMemoryLimit:
			return toolerr.Errorf(toolerr.CodeInvalidModule, "compiling the module used too much memory")
		}
		return err
	}
	if rh.Code != "" {
		if bounded && rh.Code == string(toolerr.CodeTimeout) {
			// The worker stopped at the call's deadline, which has passed
			// (budgetMS rounds up); let ctx show it too, so the caller
			// does not take the timeout for a fault of the module.
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(deadline) + p.opts.Grace):
			}
		}
		return &toolerr.Error{Code: toolerr.Code(rh.Code), Message: rh.Message}
	}
	w.loaded[spec.Key] = true
	return nil
}

// budgetMS is the time left until deadline in milliseconds, rounded up
// (at least 1): the worker's clock starts when it reads the request, so
// its deadline falls after the caller's, and a timeout it reports is
// always one the caller's ctx has seen too (the host does not keep a
// compile error whose ctx ended).
func budgetMS(deadline time.Time) uint32 {
	return uint32(max((time.Until(deadline)+time.Millisecond-1)/time.Millisecond, 1))
}

type module struct {
	pool *Pool
	spec *engine.Spec
}

// Call implements engine.Module.
func (m *module) Call(caller context.Context, export string, input []byte) ([]byte, error) {
	m.pool.enter()
	defer m.pool.leave()
	ctx, cancel := engine.Budget(caller, m.spec.Limits.TimeoutMS)
	defer cancel()
	out, err := m.call(ctx, export, input)
	if errors.Is(err, errNotDelivered) {
		// The worker was gone before it read the request; another one
		// can run it.
		out, err = m.call(ctx, export, input)
	}
	if errors.Is(err, errNoWorker) {
		err = waitError(caller, ctx)
	}
	if err != nil {
		return nil, toolerr.As(err)
	}
	return out, nil
}

func (m *module) call(ctx context.Context, export string, input []byte) ([]byte, error) {
	p := m.pool
	w, err := p.acquire(ctx, m.spec.Name, m.spec.Key)
	if err != nil {
		return nil, err
	}
	defer p.release(w, m.spec.Name)
	deadline, _ := ctx.Deadline() // engine.Budget set one
	p.sweep(ctx, w, deadline)
	if !w.loaded[m.spec.Key] {
		if err := p.load(ctx, w, m.spec); err != nil {
			return nil, err
		}
	}
	// The worker's clock (BudgetMS from now) makes a call that ends past
	// its deadline answer timeout; one that does not end is killed a grace
	// later.
	hdr := callHeader{Key: m.spec.Key, Export: export, Measure: p.opts.MeasurePeakRSS, BudgetMS: budgetMS(deadline), Poll: p.calls.Load() == 1}
	hdr.LongPoll = hdr.Poll && p.solo()
	if ev := engine.EventsOf(ctx); ev != nil {
		hdr.Events, hdr.LogLevel = true, ev.LogLevel()
	}
	h, out, err := p.roundTrip(ctx, w, kindCall, hdr, input, deadline.Add(p.opts.Grace), 0, int(m.spec.Limits.MaxOutputBytes))
	if err != nil {
		return nil, err
	}
	if h.Code != "" {
		return nil, &toolerr.Error{Code: toolerr.Code(h.Code), Message: h.Message}
	}
	return out, nil
}

// Close forgets the module; workers unload it before their next call
// (sweep) and drop it when they are replaced.
func (m *module) Close(ctx context.Context) error {
	m.pool.specs.Delete(m.spec.Key)
	return nil
}

// sweep unloads from w the modules that were closed since it last ran,
// within the call's deadline.
func (p *Pool) sweep(ctx context.Context, w *proc, deadline time.Time) {
	for key := range w.loaded {
		if _, live := p.specs.Load(key); live {
			continue
		}
		if _, _, err := p.roundTrip(ctx, w, kindUnload, unloadHeader{Key: key}, nil, deadline.Add(p.opts.Grace), 0, 0); err != nil {
			return
		}
		delete(w.loaded, key)
	}
}
