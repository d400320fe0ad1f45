package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
)

// InProcess runs modules with extism/wazero inside the calling process. It
// enforces memory pages, deadlines (at loop back-edges: wazero cannot stop
// loop-free code) and output caps, but a module that exhausts the process
// takes the process with it. The host therefore uses it inside supervised
// worker processes, or directly only for plugins an operator trusts.
//
// Every call runs in a fresh instance watched by a callGuard: each linear
// memory (the module's and the Extism kernel's) is held to the manifest's
// page limit by the guard's allocator, and listeners on the Extism host
// functions record failed allocations, output ranges the kernel ignored and
// offsets outside memory. So a call that ran out of memory ends with
// memory_limit, an output that could not be returned with
// output_too_large, and a misused host function with plugin_error, where
// extism alone would report a success with an empty or partial result.
type InProcess struct {
	// Supervised says that the process running this engine is killed by
	// its supervisor when a call passes its deadline or its caller goes
	// away and the call has not ended (package worker does both). Calls
	// are then not stopped in-process: wazero, asked to close a module when
	// its context ends (WithCloseOnContextDone), starts a goroutine for
	// every wasm function call to watch the context — ~20 per trivial
	// Extism call, since each kernel function the guest calls is one — and
	// extism derives a timeout context per call; together a fifth of a
	// worker's CPU per call. A call whose context has ended by the time it
	// returns still ends as timeout or cancelled, never as a success.
	// Set it before the first Compile; modules compiled either way do not
	// share compiled code (wazero keys its cache by the setting).
	Supervised bool

	cache wazero.CompilationCache

	// warm lists the modules that hold ready instances, oldest first; at
	// most maxWarm of them do, so that instances made ahead of calls do
	// not add up over every plugin a worker has ever run. warmMu guards
	// the list only: draining an evicted module happens outside it.
	warmMu sync.Mutex
	warm   []*inProcessModule
}

// maxWarm bounds how many modules of one engine keep ready instances.
const maxWarm = 4

// keepWarm records that m now holds a ready instance and drains the
// ready instances of the least recently warmed module beyond maxWarm.
func (e *InProcess) keepWarm(m *inProcessModule) {
	e.warmMu.Lock()
	e.warm = slices.DeleteFunc(e.warm, func(x *inProcessModule) bool { return x == m })
	e.warm = append(e.warm, m)
	var evict []*inProcessModule
	for len(e.warm) > maxWarm {
		evict = append(evict, e.warm[0])
		e.warm = e.warm[1:]
	}
	e.warmMu.Unlock()
	for _, x := range evict {
		x.drain()
	}
}

func (e *InProcess) forget(m *inProcessModule) {
	e.warmMu.Lock()
	e.warm = slices.DeleteFunc(e.warm, func(x *inProcessModule) bool { return x == m })
	e.warmMu.Unlock()
}

var _ engine.Engine = (*InProcess)(nil)

type instantiatingKey struct{}

// WithInstantiating returns a ctx under which Compile calls f once the
// module is compiled, before its start function runs (the first
// instance): the supervisor of a Supervised engine bounds that phase by
// the tool's timeout, and compiling by its own, longer, budget.
func WithInstantiating(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, instantiatingKey{}, f)
}

// NewInProcess returns an engine. cacheDir, when not empty, holds the
// compilation cache; it must be owned by the host and not writable by
// anyone else (compiled code there runs without further checks).
func NewInProcess(cacheDir string) (*InProcess, error) {
	e := &InProcess{}
	if cacheDir != "" {
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: cache dir: %w", err)
		}
		if err := os.Chmod(cacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: cache dir: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return nil, fmt.Errorf("sandbox: cache dir: %w", err)
		}
		e.cache = c
	} else {
		e.cache = wazero.NewCompilationCache()
	}
	return e, nil
}

// Close releases the compilation cache.
func (e *InProcess) Close(ctx context.Context) error { return e.cache.Close(ctx) }

// wasm32Pages is the whole wasm32 address space in 64 KiB pages.
const wasm32Pages = 65536

// Compile implements Engine. Besides compiling, it instantiates the module
// once, so that a module whose imports do not link or whose data segments
// do not fit its memory is refused now rather than failing every call.
func (e *InProcess) Compile(ctx context.Context, spec engine.Spec) (engine.Module, error) {
	checked, err := prevalidate(spec)
	if err != nil {
		return nil, err
	}
	if stopped := engine.Stopped(ctx, "the module was being compiled"); stopped != nil {
		return nil, stopped
	}
	// Fresh calls run on instances reset to a snapshot taken after the
	// module started (see resettable) unless the module holds state a
	// snapshot cannot restore; those get a real fresh instance per call.
	// A module that opts in to reuse is prepared the same way, for the
	// direct call path, and its instances are never snapshotted.
	// The listeners are compiled into the host module extism builds for
	// its "extism:host/env" functions (and, for a prepared module, into
	// its init export and the WASI functions).
	wasm := spec.Wasm
	var prep *prepared
	var listeners experimental.FunctionListenerFactory = envListeners{}
	if snapshotRefusal(checked) == nil {
		if p, err := prepareForSnapshot(spec.Wasm); err == nil {
			prep, wasm = p, p.wasm
			listeners = snapshotListeners{next: envListeners{}}
		}
	}
	wasm = redirectKernelImports(wasm)
	sum := sha256.Sum256(wasm)
	lim := spec.Limits
	manifest := extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: wasm, Hash: hex.EncodeToString(sum[:]), Name: "main"}},
		// MaxPages stays 0: extism would make it the runtime's page limit,
		// and memory.grow beyond that limit fails inside wazero where
		// nothing sees it. The page limit is enforced per call by
		// callGuard's allocator instead, which records every refusal.
		Memory:  &extism.ManifestMemory{MaxPages: 0, MaxHttpResponseBytes: 0, MaxVarBytes: 0},
		Timeout: uint64(lim.TimeoutMS),
		Config:  spec.Config,
	}
	if e.Supervised {
		manifest.Timeout = 0 // see Supervised
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(!e.Supervised).
		WithDebugInfoEnabled(false). // DWARF parsing of hostile sections is not hardened
		WithMemoryLimitPages(wasm32Pages).
		WithCompilationCache(e.cache)
	files, err := openGrants(spec.Permissions.AllowedPaths)
	if err != nil {
		return nil, err
	}
	eg := egress{plugin: spec.Name, hosts: spec.Permissions.AllowedHosts, allowPrivate: spec.AllowPrivateNetwork, secrets: spec.Secrets}
	cctx := experimental.WithFunctionListenerFactory(ctx, listeners)
	// Compile the module's functions on as many threads as the process
	// runs Go code on: a Go guest (3 MB) takes seconds on one core, and an
	// install or a watched bundle waits for it. A sandbox worker raises its
	// GOMAXPROCS while it loads a module (worker.Serve).
	cctx = experimental.WithCompilationWorkers(cctx, runtime.GOMAXPROCS(0))
	cp, err := extism.NewCompiledPlugin(cctx, manifest, extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true}, append(hostFunctions(eg), kernelFunctions()...))
	if err != nil {
		files.close()
		// wazero's compiler does not stop when ctx ends; an error after it
		// ended is about ctx, not the module.
		if stopped := engine.Stopped(ctx, "the module was being compiled"); stopped != nil {
			return nil, stopped
		}
		// wazero writes the compiled code to the cache inside
		// CompileModule; a full disk there is not the module's fault.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, toolerr.Errorf(toolerr.CodeInternal, "could not write the compilation cache (%v): free disk space or remove the cache directory; the module itself was not judged", pe)
		}
		return nil, toolerr.Errorf(toolerr.CodeInvalidModule, "the module does not compile: %v", firstLine(err.Error()))
	}
	m := &inProcessModule{engine: e, spec: spec, compiled: cp, prep: prep, files: files, ready: make(chan *instance, 2)}
	if f, _ := ctx.Value(instantiatingKey{}).(func()); f != nil {
		f()
	}
	if err := m.firstInstance(ctx); err != nil {
		m.Close(ctx)
		return nil, err
	}
	return m, nil
}
