package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// gcLimit is the Go runtime memory at which a worker collects garbage. A
// worker keeps little that lives (≈ 2 MiB: compiled modules, the instance
// cache) and makes much short garbage per call (each extism kernel call
// allocates a 10 KiB wazero call stack): at the default GOGC=100 the
// collector ran every ~10 echo calls and took half the worker's CPU
// (RATIONALE.md, "Worker garbage collection"). With GOGC off it runs every
// few hundred calls. The limit is also what garbage can hold: unlike a
// larger GOGC, it does not grow with a call's live heap (GOGC=400 let a
// hostile call's garbage cross the RSS cap); linear memories are mapped
// outside the Go heap and do not count. It is a floor: tuneGC raises the
// limit with the live heap.
const gcLimit = 48 << 20

// compileMemoryLimit is the Go runtime memory at which a worker that
// compiles a module collects garbage more eagerly than GOGC=100 would:
// half the supervisor's default RSS cap (768 MiB), so that a large
// module's compile, whose garbage doubles its live heap at GOGC=100, is
// not killed for memory it would not have held under the call-time limit.
const compileMemoryLimit = 384 << 20

// compiling sets the runtime up for compiling a module and returns what
// puts it back for calls. A call runs on one P under gcLimit (GOGC off);
// compiling a Go guest (3 MB of wasm) builds ~100 MiB of short-lived
// compiler state, under which that limit had the collector run without
// pause (an install took 2.6 s in the worker against 0.7 s in a test
// process). Compiling runs on every CPU (wazero's compilation workers,
// sandbox.InProcess.Compile) with GOGC=100 pacing below
// compileMemoryLimit.
func compiling() (restore func()) {
	procs := runtime.GOMAXPROCS(runtime.NumCPU())
	pct := debug.SetGCPercent(100)
	lim := debug.SetMemoryLimit(compileMemoryLimit)
	return func() {
		debug.SetMemoryLimit(lim)
		debug.SetGCPercent(pct)
		runtime.GOMAXPROCS(procs)
	}
}

// Serve is the worker side: it reads requests from r, runs them with an
// in-process engine and writes replies to w, one request at a time, until r
// ends. It is what `toolhost sandbox-worker` runs.
func Serve(ctx context.Context, r io.Reader, w io.Writer, cacheDir string) error {
	// The supervisor bounds this process from outside (RSS watchdog, address
	// space limit). Inside, the collector runs when the runtime's memory
	// reaches gcLimit rather than when the heap doubles: see gcLimit.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcLimit)
	eng, err := sandbox.NewInProcess(cacheDir)
	if err != nil {
		return err
	}
	// The pool kills this process when a call passes its deadline or is
	// cancelled and does not end (watchdog.go): calls need not be stoppable
	// in-process, which costs a goroutine per wasm function call.
	eng.Supervised = true
	defer eng.Close(ctx)
	modules := map[string]finishing{}
	// The supervisor says in each call whether the worker polls for the
	// next request (callHeader.Poll).
	var poll, long atomic.Bool
	if p, ok := r.(*rawPipe); ok {
		p.spin.budget = requestSpin
		p.spin.alone = poll.Load
		p.spin.solo, p.spin.longBudget = long.Load, longSpin
	}
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	reply := func(e *toolerr.Error, body []byte) error {
		var h replyHeader
		if e != nil {
			h = replyHeader{Code: string(e.Code), Message: e.Message}
		}
		if err := writeFrame(bw, kindReply, h, body); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := writeFrame(bw, kindReady, struct{}{}, nil); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	reqs := make(chan request)
	stop := make(chan struct{})
	defer close(stop)
	go readRequests(ctx, br, reqs, stop)
	for {
		req := <-reqs
		f, err, ctx := req.f, req.err, req.ctx
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch f.kind {
		case kindLoad:
			var h loadHeader
			if err := json.Unmarshal(f.header, &h); err != nil {
				return fmt.Errorf("worker: bad load header: %w", err)
			}
			if old := modules[h.Key]; old != nil {
				old.Close(ctx)
				delete(modules, h.Key)
			}
			lctx, cancel := withBudget(ctx, h.BudgetMS)
			lctx = sandbox.WithInstantiating(lctx, func() {
				// If the pipe broke, the reply's write reports it.
				if writeFrame(bw, kindInstantiating, struct{}{}, nil) == nil {
					bw.Flush()
				}
			})
			restore := compiling()
			mod, err := eng.Compile(lctx, specFromLoad(h, f.body))
			restore()
			cancel()
			if err != nil {
				trimMemory()
				if err := reply(asError(err), nil); err != nil {
					return err
				}
				continue
			}
			modules[h.Key] = mod.(finishing) // every sandbox module is one
			if err := reply(nil, nil); err != nil {
				return err
			}
			trimMemory() // a module's compiled form adds to the live heap
		case kindCall:
			var h callHeader
			if err := json.Unmarshal(f.header, &h); err != nil {
				return fmt.Errorf("worker: bad call header: %w", err)
			}
			poll.Store(h.Poll)
			long.Store(h.LongPoll)
			mod := modules[h.Key]
			if mod == nil {
				if err := reply(toolerr.Errorf(toolerr.CodeInternal, "module not loaded in worker"), nil); err != nil {
					return err
				}
				continue
			}
			if h.Measure {
				resetPeakRSS()
			}
			cctx, cancel := withBudget(ctx, h.BudgetMS)
			if h.Events {
				cctx = engine.WithEvents(cctx, &frameEvents{bw: bw, level: h.LogLevel})
			}
			// The answer goes out before the instance is reset: the
			// reset is this worker's work before it reads the next
			// request, not the caller's wait.
			out, finish, err := mod.CallThen(cctx, h.Export, f.body)
			cancel()
			if err != nil {
				out = nil
			}
			var peak int64
			if h.Measure {
				peak = ownPeakRSS()
			}
			rerr := replyCall(bw, asErrorOrNil(err), out, peak)
			finish()
			if rerr != nil {
				return rerr
			}
			out = nil
			trimMemory()
		case kindUnload:
			var h unloadHeader
			if err := json.Unmarshal(f.header, &h); err == nil {
				if m := modules[h.Key]; m != nil {
					m.Close(ctx)
					delete(modules, h.Key)
				}
			}
			if err := reply(nil, nil); err != nil {
				return err
			}
		default:
			return fmt.Errorf("worker: unknown frame kind %d", f.kind)
		}
		req.cancel()
	}
}

// request is one frame read from the supervisor, with the context it runs
// under: a cancel frame that follows it cancels that context.
type request struct {
	f      frame
	err    error
	ctx    context.Context
	cancel context.CancelFunc
}

// readRequests reads frames until reading fails, passing requests on in
// order. A cancel frame is not passed on: it cancels the request read
// before it (the supervisor sends it only after that request and before
// the next, so it can never reach a later one; if that request is done
// already, it is a no-op).
func readRequests(ctx context.Context, br *bufio.Reader, reqs chan<- request, stop <-chan struct{}) {
	cancelLast := func() {}
	for {
		f, err := readFrame(br, plugin.MaxWasmBytes+plugin.MaxOutputBytes)
		if err == nil && f.kind == kindCancel {
			cancelLast()
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		cancelLast = cancel
		select {
		case reqs <- request{f: f, err: err, ctx: rctx, cancel: cancel}:
		case <-stop:
			cancel()
			return
		}
		if err != nil {
			return
		}
	}
}

// withBudget bounds ctx to budgetMS from now (0: unbounded): the time the
// supervisor said was left to the call's deadline.
func withBudget(ctx context.Context, budgetMS uint32) (context.Context, context.CancelFunc) {
	if budgetMS == 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(budgetMS)*time.Millisecond)
}

// finishing is a module a worker runs: it answers before the instance's
// reset (engine.Finisher), which the sandbox's modules all do.
type finishing interface {
	engine.Module
	engine.Finisher
}

func replyCall(bw *bufio.Writer, e *toolerr.Error, body []byte, peak int64) error {
	h := replyHeader{PeakRSS: peak}
	if e != nil {
		h.Code, h.Message = string(e.Code), e.Message
	}
	if err := writeFrame(bw, kindReply, h, body); err != nil {
		return err
	}
	return bw.Flush()
}

// resetPeakRSS restarts the kernel's peak resident memory (VmHWM) count
// for this process.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func ownPeakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseStatusKB(data, "VmHWM:")
}

// trimSlack is how much the worker's memory may grow past what it held
// after its last trim before it hands memory back to the system.
const trimSlack = 64 << 20

var (
	trimSamples = []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	trimBase uint64
	gcTarget uint64 = gcLimit // the memory limit set now
)

// tuneGC keeps the memory limit at least twice the live heap (the last
// collection's) plus 16 MiB for the runtime's other memory: with many
// modules loaded a worker's live heap can pass gcLimit/2, and under a fixed
// limit the collector would then run after every few allocations. Above
// the floor this is GOGC=100's pacing again. It reads the samples heldBytes
// just read.
func tuneGC() {
	live := trimSamples[2].Value
	if live.Kind() != metrics.KindUint64 {
		return
	}
	want := max(gcLimit, 2*live.Uint64()+16<<20)
	if want > gcTarget || want < gcTarget-gcTarget/4 {
		gcTarget = want
		debug.SetMemoryLimit(int64(want))
	}
}

// heldBytes is the memory the Go runtime holds from the system (an upper
// bound of its share of the resident set).
func heldBytes() uint64 {
	metrics.Read(trimSamples)
	total, released := trimSamples[0].Value, trimSamples[1].Value
	if total.Kind() != metrics.KindUint64 || released.Kind() != metrics.KindUint64 {
		return 0
	}
	return total.Uint64() - released.Uint64()
}

// trimMemory returns memory to the system after a call that used a lot of
// it (a plugin's linear memory, a deep call stack), so that what one call
// left behind does not count against the next one's memory cap. Serve
// runs one request at a time, so the package state needs no lock.
func trimMemory() {
	if held := heldBytes(); held > trimBase+trimSlack {
		debug.FreeOSMemory()
		trimBase = heldBytes()
	} else if held < trimBase {
		trimBase = held
	}
	tuneGC()
}

func specFromLoad(h loadHeader, wasm []byte) engine.Spec {
	return engine.Spec{
		Key: h.Key, Name: h.Name, Wasm: wasm, Exports: h.Exports, AllowPrivateNetwork: h.Private, ReuseInstances: h.Reuse,
		Config: h.Config, Secrets: h.Secrets,
		Limits:      plugin.Limits{MemoryPages: h.MemoryPages, TimeoutMS: h.TimeoutMS, MaxOutputBytes: h.MaxOutput},
		Permissions: plugin.Permissions{AllowedHosts: h.Hosts, AllowedPaths: h.Paths},
	}
}

func asErrorOrNil(err error) *toolerr.Error {
	if err == nil {
		return nil
	}
	return asError(err)
}

func asError(err error) *toolerr.Error {
	var se *toolerr.Error
	if errors.As(err, &se) {
		return se
	}
	return toolerr.Errorf(toolerr.CodeInternal, "%v", err)
}

// Run is the body of a worker process (`toolhost sandbox-worker`): it
// serves requests on stdin/stdout until stdin ends. The protocol keeps the
// original stdout to itself and file descriptor 1 is pointed at stderr, so
// that nothing else in the process (a library's stray print) can write
// into the protocol stream.
func Run(ctx context.Context, cacheDir string) error {
	// extism copies a module's WASI stdout to os.Stdout when this is set.
	os.Unsetenv("EXTISM_ENABLE_WASI_OUTPUT")
	var out io.Writer = os.Stdout
	if fd, err := unix.Dup(1); err == nil {
		if err := unix.Dup3(2, 1, 0); err == nil {
			unix.CloseOnExec(fd)
			out = nonBlocking(fd, "protocol")
		} else {
			unix.Close(fd)
		}
	}
	in := nonBlocking(0, "requests")
	return Serve(ctx, in, out, cacheDir)
}

// nonBlocking returns descriptor fd as a rawPipe: a worker waiting for its
// next request parks a goroutine in the poller, and reads and writes do
// not wake the runtime's monitor (see rawPipe). If fd cannot be made
// non-blocking, it is returned as a plain (blocking) file.
func nonBlocking(fd int, name string) io.ReadWriter {
	if err := unix.SetNonblock(fd, true); err != nil {
		return os.NewFile(uintptr(fd), name)
	}
	// os.NewFile registers a non-blocking descriptor with the poller.
	f := os.NewFile(uintptr(fd), name)
	p, err := newRawPipe(f)
	if err != nil {
		return f
	}
	return p
}

// Main runs a worker and returns the process exit code.
func Main(cacheDir string) int {
	if err := Run(context.Background(), cacheDir); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox worker: %v\n", err)
		return 1
	}
	return 0
}
