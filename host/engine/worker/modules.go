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
// compile (or kills the worker while compiling) is refused now.
func (p *Pool) Compile(ctx context.Context, spec engine.Spec) (engine.Module, error) {
	s := spec
	p.specs.Store(spec.Key, &s)
	err := p.compileIn(ctx, &s)
	if errors.Is(err, errNotDelivered) {
		err = p.compileIn(ctx, &s)
	}
	if err != nil {
		p.specs.Delete(spec.Key)
		var se *toolerr.Error
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, toolerr.Errorf(toolerr.CodeInternal, "%v", err)
	}
	return &module{pool: p, spec: &s, slots: make(chan struct{}, max(1, p.opts.Workers-1))}, nil
}

func (p *Pool) compileIn(ctx context.Context, spec *engine.Spec) error {
	w, err := p.acquire(ctx, spec.Key)
	if err != nil {
		return err
	}
	defer p.release(w)
	return p.load(w, spec)
}

// maxCompileTime bounds loading (compiling and instantiating once) a module
// in a worker.
const maxCompileTime = 2 * time.Minute

func (p *Pool) load(w *proc, spec *engine.Spec) error {
	h := loadHeader{
		Key: spec.Key, Name: spec.Name, MemoryPages: spec.Limits.MemoryPages, TimeoutMS: spec.Limits.TimeoutMS,
		MaxOutput: spec.Limits.MaxOutputBytes, Hosts: spec.Permissions.AllowedHosts, Paths: spec.Permissions.AllowedPaths,
		Exports: spec.Exports, Private: spec.AllowPrivateNetwork, Reuse: spec.ReuseInstances,
	}
	// Compiling a large module can take seconds (a Go guest: ~2 s on an
	// idle core, much more on a loaded machine); a module that makes the
	// compiler run away is stopped by the same watchdogs as a call.
	rh, _, err := p.roundTrip(w, kindLoad, h, spec.Wasm, maxCompileTime, int(plugin.MaxOutputBytes))
	if err != nil {
		if se := (*toolerr.Error)(nil); errors.As(err, &se) && se.Code == toolerr.CodeTimeout {
			return toolerr.Errorf(toolerr.CodeInvalidModule, "compiling the module took too long")
		}
		var se *toolerr.Error
		if errors.As(err, &se) && se.Code == toolerr.CodeMemoryLimit {
			return toolerr.Errorf(toolerr.CodeInvalidModule, "compiling the module used too much memory")
		}
		return err
	}
	if rh.Code != "" {
		return &toolerr.Error{Code: toolerr.Code(rh.Code), Message: rh.Message}
	}
	w.loaded[spec.Key] = true
	return nil
}

type module struct {
	pool  *Pool
	spec  *engine.Spec
	slots chan struct{} // this plugin's share of the workers
}

// Call implements engine.Module.
func (m *module) Call(ctx context.Context, export string, input []byte) ([]byte, error) {
	select {
	case m.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, toolerr.Errorf(toolerr.CodeBusy, "plugin %s is already running in every sandbox worker it may use; retry shortly", m.spec.Name)
	}
	defer func() { <-m.slots }()
	out, err := m.call(ctx, export, input)
	if errors.Is(err, errNotDelivered) {
		// The worker was gone before it read the request; another one
		// can run it.
		out, err = m.call(ctx, export, input)
	}
	if err != nil {
		var se *toolerr.Error
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, toolerr.Errorf(toolerr.CodeInternal, "%v", err)
	}
	return out, nil
}

func (m *module) call(ctx context.Context, export string, input []byte) ([]byte, error) {
	p := m.pool
	w, err := p.acquire(ctx, m.spec.Key)
	if err != nil {
		return nil, err
	}
	defer p.release(w)
	p.sweep(w)
	if !w.loaded[m.spec.Key] {
		if err := p.load(w, m.spec); err != nil {
			return nil, err
		}
	}
	deadline := time.Duration(m.spec.Limits.TimeoutMS)*time.Millisecond + p.opts.Grace
	if d, ok := ctx.Deadline(); ok && time.Until(d) < deadline {
		deadline = max(time.Until(d), time.Millisecond)
	}
	h, out, err := p.roundTrip(w, kindCall, callHeader{Key: m.spec.Key, Export: export, Measure: p.opts.MeasurePeakRSS}, input, deadline, int(m.spec.Limits.MaxOutputBytes))
	if err != nil {
		return nil, err
	}
	if h.Code != "" {
		return nil, &toolerr.Error{Code: toolerr.Code(h.Code), Message: h.Message}
	}
	return out, nil
}

// Close forgets the module; workers drop it when they are replaced.
func (m *module) Close(ctx context.Context) error {
	m.pool.specs.Delete(m.spec.Key)
	return nil
}

// sweep unloads from w the modules that were closed since it last ran.
func (p *Pool) sweep(w *proc) {
	for key := range w.loaded {
		if _, live := p.specs.Load(key); live {
			continue
		}
		if _, _, err := p.roundTrip(w, kindUnload, unloadHeader{Key: key}, nil, 5*time.Second, 0); err != nil {
			return
		}
		delete(w.loaded, key)
	}
}
