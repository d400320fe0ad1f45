package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
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
	cache wazero.CompilationCache

	// warm lists the modules that hold ready instances, oldest first; at
	// most maxWarm of them do, so that instances made ahead of calls do
	// not add up over every plugin a worker has ever run.
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
	if err := Prevalidate(spec); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(spec.Wasm)
	lim := spec.Limits
	manifest := extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: spec.Wasm, Hash: hex.EncodeToString(sum[:]), Name: "main"}},
		// MaxPages stays 0: extism would make it the runtime's page limit,
		// and memory.grow beyond that limit fails inside wazero where
		// nothing sees it. The page limit is enforced per call by
		// callGuard's allocator instead, which records every refusal.
		Memory:  &extism.ManifestMemory{MaxPages: 0, MaxHttpResponseBytes: 0, MaxVarBytes: 0},
		Timeout: uint64(lim.TimeoutMS),
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithDebugInfoEnabled(false). // DWARF parsing of hostile sections is not hardened
		WithMemoryLimitPages(wasm32Pages).
		WithCompilationCache(e.cache)
	files, err := openGrants(spec.Permissions.AllowedPaths)
	if err != nil {
		return nil, err
	}
	eg := egress{hosts: spec.Permissions.AllowedHosts, allowPrivate: spec.AllowPrivateNetwork}
	// The listeners are compiled into the host module extism builds for
	// its "extism:host/env" functions.
	cctx := experimental.WithFunctionListenerFactory(ctx, envListeners{})
	cp, err := extism.NewCompiledPlugin(cctx, manifest, extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true}, hostFunctions(eg))
	if err != nil {
		files.close()
		// wazero writes the compiled code to the cache inside
		// CompileModule; a full disk there is not the module's fault.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, toolerr.Errorf(toolerr.CodeInternal, "could not write the compilation cache (%v): free disk space or remove the cache directory; the module itself was not judged", pe)
		}
		return nil, toolerr.Errorf(toolerr.CodeInvalidModule, "the module does not compile: %v", firstLine(err.Error()))
	}
	m := &inProcessModule{engine: e, spec: spec, compiled: cp, files: files, ready: make(chan *instance, 2)}
	if err := m.firstInstance(ctx); err != nil {
		m.Close(ctx)
		return nil, err
	}
	return m, nil
}

type inProcessModule struct {
	engine   *InProcess
	spec     engine.Spec
	compiled *extism.CompiledPlugin
	files    *readOnlyFiles
	closeMu  sync.RWMutex
	closed   bool

	// ready holds instances made ahead of calls. Without ReuseInstances an
	// instance in ready has never run a call: making the next one right
	// after a call takes instantiation off the next call's path. With
	// ReuseInstances, instances that ended a call cleanly go back here.
	ready   chan *instance
	filling sync.Mutex
}

// instance is one instantiation of the module with the guard and stderr
// buffer bound to it when it was made.
type instance struct {
	p      *extism.Plugin
	g      *callGuard
	stderr *cappedBuffer
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
func (m *inProcessModule) firstInstance(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	in, err := m.newInstance(ctx)
	if err != nil {
		msg := strings.TrimPrefix(firstLine(err.Error()), "instantiating module: ")
		return toolerr.Errorf(toolerr.CodeInvalidModule, "the module cannot be instantiated: %s", msg)
	}
	if !m.put(in) {
		in.p.Close(context.Background())
	}
	return nil
}

// newInstance instantiates the module with a fresh guard and stderr.
func (m *inProcessModule) newInstance(ctx context.Context) (*instance, error) {
	in := &instance{g: newCallGuard(m.spec, 0), stderr: &cappedBuffer{n: 4096}}
	ctx = context.WithValue(ctx, guardKey{}, in.g)
	ctx = experimental.WithMemoryAllocator(ctx, in.g)
	p, err := m.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: m.moduleConfig(in.stderr)})
	if err != nil {
		return in, err
	}
	in.p = p
	in.g.findKernel(p.Memory())
	return in, nil
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
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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

// done disposes of an instance after a call: reused only when the
// manifest opted in and the call ended cleanly, else closed.
func (m *inProcessModule) done(in *instance, clean bool) {
	if m.spec.ReuseInstances && clean {
		in.g.reset()
		if m.put(in) {
			return
		}
	}
	in.p.Close(context.Background())
	if !m.spec.ReuseInstances {
		m.refill()
	}
}

func (m *inProcessModule) Call(ctx context.Context, export string, input []byte) (out []byte, err error) {
	m.closeMu.RLock()
	defer m.closeMu.RUnlock()
	if m.closed {
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "plugin %s was unloaded", m.spec.Name)
	}
	if uint64(len(input)) > uint64(m.spec.Limits.MemoryPages)*65536 {
		return nil, m.inputError(len(input))
	}
	deadline := time.Duration(m.spec.Limits.TimeoutMS) * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()

	in, ierr := m.take(ctx)
	g, stderr := in.g, in.stderr
	g.inputLen = uint64(len(input))
	state := &callState{}
	ctx = context.WithValue(ctx, callStateKey{}, state)
	ctx = context.WithValue(ctx, guardKey{}, g)
	ctx = experimental.WithMemoryAllocator(ctx, g)
	if ierr != nil {
		return nil, m.failure(ctx, g, ierr, stderr)
	}
	inst := in.p
	defer func() { m.done(in, err == nil) }()
	rc, out, err := inst.CallWithContext(ctx, export, input)
	if g.inputRefused && ctx.Err() == nil {
		// extism ignores the failure to copy the input into the kernel's
		// memory: the export ran on an empty (or clobbered) input.
		return nil, m.inputError(len(input))
	}
	if err != nil || rc != 0 {
		if denied := deniedError(state); denied != nil && ctx.Err() == nil {
			return nil, denied
		}
	}
	if err != nil {
		return nil, m.failure(ctx, g, err, stderr)
	}
	if g.badAccess != "" {
		return nil, toolerr.Errorf(toolerr.CodePluginError, "the tool %s", g.badAccess)
	}
	if rc != 0 {
		if g.exhausted() {
			return nil, m.memoryError(g, fmt.Sprintf("it returned error code %d", rc))
		}
		return nil, toolerr.Errorf(toolerr.CodePluginError, "the tool returned error code %d", rc)
	}
	return m.output(g, out)
}

// output checks a successful call's output. The Extism kernel silently
// ignores an output_set whose range is not inside its memory (for
// instance after an allocation failed), which would otherwise look like a
// success with an empty result.
func (m *inProcessModule) output(g *callGuard, out []byte) ([]byte, error) {
	limit := uint64(m.spec.Limits.MaxOutputBytes)
	if g.outputSet && uint64(len(out)) != g.outputLen {
		switch {
		case g.outputLen > limit:
			return nil, toolerr.Errorf(toolerr.CodeOutputTooLarge, "the tool tried to return %d bytes of output, the limit is %d", g.outputLen, limit)
		case g.exhausted():
			return nil, m.memoryError(g, "its output did not fit")
		default:
			return nil, toolerr.Errorf(toolerr.CodePluginError, "the tool set its output to a range outside its memory (%d bytes at offset %#x)", g.outputLen, g.outputOffset)
		}
	}
	if uint64(len(out)) > limit {
		return nil, toolerr.Errorf(toolerr.CodeOutputTooLarge, "the tool produced %d bytes of output, the limit is %d", len(out), limit)
	}
	if len(out) == 0 && g.exhausted() {
		return nil, m.memoryError(g, "it returned no output")
	}
	return out, nil
}

func (m *inProcessModule) inputError(n int) *toolerr.Error {
	return toolerr.Errorf(toolerr.CodeMemoryLimit, "the arguments (%d bytes) do not fit in the tool's memory (limit %s; the Extism runtime's own 16 pages count against it)", n, pagesText(m.spec.Limits.MemoryPages))
}

func (m *inProcessModule) memoryError(g *callGuard, what string) *toolerr.Error {
	return toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool ran out of memory (%s; limit %s) and %s", g.exhaustion(), pagesText(m.spec.Limits.MemoryPages), what)
}

// failure turns an error from instantiating or running the module into an
// *Error.
func (m *inProcessModule) failure(ctx context.Context, g *callGuard, err error, stderr *cappedBuffer) *toolerr.Error {
	spec := m.spec
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return toolerr.Errorf(toolerr.CodeTimeout, "the tool did not finish within %d ms", spec.Limits.TimeoutMS)
	}
	if ctx.Err() != nil {
		return toolerr.Errorf(toolerr.CodeTimeout, "the call was cancelled")
	}
	msg := printable(truncateMsg(strings.TrimSuffix(firstLine(err.Error()), " (recovered by wazero)"), 1024))
	guestErr := stderr.String()
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	trapped := isExit || strings.Contains(msg, "wasm error:")
	// A language runtime that runs out of memory says so on stderr and
	// exits or traps (Go: "fatal error: out of memory", exit code 2).
	oomSaid := strings.Contains(strings.ToLower(guestErr), "out of memory")
	switch {
	case g.exhausted() && trapped:
		return m.memoryError(g, "crashed ("+msg+")")
	case trapped && oomSaid:
		return toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool ran out of memory (limit %s)%s", pagesText(spec.Limits.MemoryPages), tail(guestErr))
	case g.badAccess != "":
		return toolerr.Errorf(toolerr.CodePluginError, "the tool %s", g.badAccess)
	case isExit:
		return toolerr.Errorf(toolerr.CodePluginError, "the tool exited with code %d%s", exit.ExitCode(), tail(guestErr))
	case strings.Contains(msg, "unknown function"):
		return toolerr.Errorf(toolerr.CodeInvalidModule, "the module does not export the tool's function")
	case strings.Contains(msg, "stack overflow"):
		return toolerr.Errorf(toolerr.CodePluginError, "the tool crashed (stack overflow: its calls nested too deeply)%s", tail(guestErr))
	case trapped:
		return toolerr.Errorf(toolerr.CodePluginError, "the tool crashed (%s)%s", msg, tail(guestErr))
	case strings.HasPrefix(msg, "could not ") || strings.Contains(msg, "instantiating "):
		// A host function refused the guest's arguments (extism panics
		// with "could not read/write value at offset").
		return toolerr.Errorf(toolerr.CodePluginError, "the tool crashed (%s)", msg)
	}
	// An error set by the guest with error_set: the tool's own message.
	if g.exhausted() {
		return m.memoryError(g, "failed: "+printable(truncateMsg(err.Error(), 1024)))
	}
	return toolerr.Errorf(toolerr.CodePluginError, "%s", printable(truncateMsg(err.Error(), 2048)))
}

// printable makes guest-controlled text safe to show in logs, terminals
// and API answers: invalid UTF-8, control characters other than newline
// and tab (terminal escapes) and bidirectional overrides become U+FFFD.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0),
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return '\uFFFD'
		}
		return r
	}, s)
}

func pagesText(pages uint32) string {
	b := uint64(pages) * 65536
	if b >= 1<<20 {
		return fmt.Sprintf("%d pages = %d MiB", pages, b>>20)
	}
	return fmt.Sprintf("%d pages = %d KiB", pages, b>>10)
}

func tail(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	return ": " + printable(truncateMsg(firstLine(s), 300))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func truncateMsg(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

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
	badAccess string     // the first out-of-range host-function access
}

// reset clears what one call recorded, for an instance that is reused.
func (g *callGuard) reset() {
	*g = callGuard{memLimit: g.memLimit, mems: g.mems, kernel: g.kernel}
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

// Allocate implements experimental.MemoryAllocator.
func (g *callGuard) Allocate(_, _ uint64) experimental.LinearMemory {
	l := &linearMemory{g: g}
	g.mems = append(g.mems, l)
	return l
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

// linearMemory backs one wasm memory with a Go slice, as wazero does by
// default, but refuses to grow past the call's page limit. wazero's own
// limit is the whole wasm32 space, so every refusal within it passes here.
type linearMemory struct {
	g       *callGuard
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

func (l *linearMemory) Free() { l.buf = nil }

// envListeners attaches listeners to the Extism host functions whose
// misuse the kernel answers silently: it ignores an out-of-range
// store_u8 or output_set and answers 0 to a load, a length or an
// allocation it cannot serve, so a plugin bug would look like a success.
type envListeners struct{}

const envModule = "extism:host/env"

func (envListeners) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	// Only extism's Go host functions: a guest module can take any module
	// name, but not be a Go function.
	if def.ModuleName() != envModule || def.GoFunction() == nil || len(def.ExportNames()) == 0 {
		return nil
	}
	switch name := def.ExportNames()[0]; name {
	case "alloc", "output_set", "store_u8", "load_u8", "store_u64", "load_u64",
		"input_load_u8", "input_load_u64", "length", "length_unsafe", "free":
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
	}
}

func (l envListener) After(ctx context.Context, _ api.Module, _ api.FunctionDefinition, results []uint64) {
	if l.name != "alloc" {
		return
	}
	if g := guardOf(ctx); g != nil && len(results) == 1 && results[0] == 0 && g.pendingSize > 0 {
		g.failedAlloc = max(g.failedAlloc, g.pendingSize)
	}
}

func (envListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}

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
