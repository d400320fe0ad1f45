package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// InProcess runs modules with extism/wazero inside the calling process. It
// enforces memory pages, deadlines (at loop back-edges: wazero cannot stop
// loop-free code) and output caps, but a module that exhausts the process
// takes the process with it. The host therefore uses it inside supervised
// worker processes, or directly only for plugins an operator trusts.
type InProcess struct {
	cache wazero.CompilationCache
}

var _ Engine = (*InProcess)(nil)

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

// Compile implements Engine.
func (e *InProcess) Compile(ctx context.Context, spec Spec) (Module, error) {
	if err := Prevalidate(spec); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(spec.Wasm)
	lim := spec.Limits
	manifest := extism.Manifest{
		Wasm:    []extism.Wasm{extism.WasmData{Data: spec.Wasm, Hash: hex.EncodeToString(sum[:]), Name: "main"}},
		Memory:  &extism.ManifestMemory{MaxPages: lim.MemoryPages, MaxHttpResponseBytes: 0, MaxVarBytes: 0},
		Timeout: uint64(lim.TimeoutMS),
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithDebugInfoEnabled(false). // DWARF parsing of hostile sections is not hardened

		WithMemoryLimitPages(lim.MemoryPages).
		WithCompilationCache(e.cache)
	files, err := openGrants(spec.Permissions.AllowedPaths)
	if err != nil {
		return nil, err
	}
	eg := egress{hosts: spec.Permissions.AllowedHosts, allowPrivate: spec.AllowPrivateNetwork}
	cp, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true}, hostFunctions(eg))
	if err != nil {
		files.close()
		return nil, Errorf(CodeInvalidModule, "the module does not compile: %v", err)
	}
	return &inProcessModule{spec: spec, compiled: cp, files: files}, nil
}

type inProcessModule struct {
	spec     Spec
	compiled *extism.CompiledPlugin
	files    *readOnlyFiles
	closeMu  sync.RWMutex
	closed   bool
}

func (m *inProcessModule) Close(ctx context.Context) error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
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

func (m *inProcessModule) Call(ctx context.Context, export string, input []byte) ([]byte, error) {
	m.closeMu.RLock()
	defer m.closeMu.RUnlock()
	if m.closed {
		return nil, Errorf(CodeUnavailable, "plugin %s was unloaded", m.spec.Name)
	}
	deadline := time.Duration(m.spec.Limits.TimeoutMS) * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()

	stderr := &cappedBuffer{n: 4096}
	mc := wazero.NewModuleConfig().
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader).
		WithStderr(stderr).
		WithFSConfig(m.files.cfg)
	state := &callState{}
	ctx = context.WithValue(ctx, callStateKey{}, state)
	inst, err := m.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: mc})
	if err != nil {
		return nil, classify(ctx, err, stderr, m.spec)
	}
	defer inst.Close(context.Background())
	rc, out, err := inst.CallWithContext(ctx, export, input)
	if err != nil || rc != 0 {
		if denied := deniedError(state); denied != nil && ctx.Err() == nil {
			return nil, denied
		}
	}
	if err != nil {
		return nil, classify(ctx, err, stderr, m.spec)
	}
	if rc != 0 {
		return nil, Errorf(CodePluginError, "the tool returned error code %d", rc)
	}
	if uint64(len(out)) > uint64(m.spec.Limits.MaxOutputBytes) {
		return nil, Errorf(CodeOutputTooLarge, "the tool produced %d bytes of output, the limit is %d", len(out), m.spec.Limits.MaxOutputBytes)
	}
	return out, nil
}

// classify turns an extism/wazero error into an *Error.
func classify(ctx context.Context, err error, stderr *cappedBuffer, spec Spec) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Errorf(CodeTimeout, "the tool did not finish within %d ms", spec.Limits.TimeoutMS)
	}
	if ctx.Err() != nil {
		return Errorf(CodeTimeout, "the call was cancelled")
	}
	msg := err.Error()
	guestErr := stderr.String()
	lower := strings.ToLower(msg + "\n" + guestErr)
	if strings.Contains(lower, "out of memory") || strings.Contains(lower, "memory limit") || strings.Contains(lower, "cannot allocate") {
		return Errorf(CodeMemoryLimit, "the tool ran out of memory (limit %d pages = %d MiB)", spec.Limits.MemoryPages, spec.Limits.MemoryPages/16)
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return Errorf(CodePluginError, "the tool exited with code %d%s", exit.ExitCode(), tail(guestErr))
	}
	if strings.Contains(msg, "unknown function") {
		return Errorf(CodeInvalidModule, "the module does not export the tool's function")
	}
	if strings.HasPrefix(msg, "wasm error:") || strings.Contains(msg, "wasm error:") {
		return Errorf(CodePluginError, "the tool crashed (%s)%s", firstLine(msg), tail(guestErr))
	}
	// An error set by the guest with error_set: the tool's own message.
	return Errorf(CodePluginError, "%s", truncateMsg(msg, 2048))
}

func tail(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	return ": " + truncateMsg(firstLine(s), 300)
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
