// Package worker runs plugin calls in supervised worker processes.
//
// wazero cannot stop every runaway module (loop-free call trees ignore
// deadlines) and some modules can exhaust the Go process that runs them
// (fatal, unrecoverable out-of-memory). So the host never runs plugin wasm in
// its own process: a Pool keeps long-lived worker processes (`toolhost
// sandbox-worker`), started before calls arrive, each running one call at a
// time. The supervisor enforces what the worker cannot: at the deadline plus
// a short grace it kills the worker, it kills a worker whose resident memory
// passes the cap, it caps the worker's address space, and it replaces any
// worker that dies. A killed call ends with a typed error; other calls and
// the host are unaffected.
package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// Options configure a Pool.
type Options struct {
	// Command starts a worker: the executable and its arguments, e.g.
	// {"/usr/bin/toolhost", "sandbox-worker", "--cache", DIR}.
	Command []string
	// Workers is the number of worker processes; 0 means 2. One plugin
	// runs in at most Workers-1 of them at once (when there are two or
	// more), so a slow or hostile plugin never holds every worker and other
	// plugins' calls keep being answered.
	Workers int
	// MaxRSSBytes kills a worker whose resident memory exceeds it during a
	// call; 0 means 768 MiB.
	MaxRSSBytes int64
	// AddressSpaceBytes is the worker's RLIMIT_AS; 0 means 8 GiB.
	AddressSpaceBytes uint64
	// Grace is how long past a call's deadline the worker may take before
	// it is killed; 0 means 100 ms.
	Grace time.Duration
	// MeasurePeakRSS has every worker report the peak resident memory of
	// each call (two extra system calls per call), for Stats.
	MeasurePeakRSS bool
	Logger         *slog.Logger
}

// startTimeout bounds how long a new worker may take to report ready.
const startTimeout = 30 * time.Second

// Pool is a engine.Engine whose calls run in worker processes.
type Pool struct {
	opts  Options
	log   *slog.Logger
	idle  *idleSet
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
	specs sync.Map // key → *engine.Spec, for (re)loading into workers
	gen   atomic.Uint64

	procsMu sync.Mutex
	procs   map[*proc]struct{} // every live worker process, idle or busy

	lifeMu  sync.Mutex // orders replace's wg.Add before Close's wg.Wait
	closing bool

	started, killed, crashed atomic.Uint64
	peakRSS                  atomic.Int64
}

// Stats is a snapshot of a pool's workers.
type Stats struct {
	// Workers is the number of worker processes alive now, idle or busy
	// (it dips below Options.Workers while a replacement starts).
	Workers int
	// Started counts the processes started since NewPool, Killed those
	// the supervisor killed (deadline, memory cap, protocol error, a dead
	// or stopped pool) and Crashed those that died on their own.
	Started, Killed, Crashed uint64
	// PeakRSSBytes is the highest resident memory of any one worker seen
	// since NewPool or the last ResetPeakRSS: sampled every 10 ms during
	// calls, read just before a kill, and reported by the worker after
	// every call when Options.MeasurePeakRSS is set.
	PeakRSSBytes int64
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.procsMu.Lock()
	n := len(p.procs)
	p.procsMu.Unlock()
	return Stats{
		Workers: n, Started: p.started.Load(), Killed: p.killed.Load(), Crashed: p.crashed.Load(),
		PeakRSSBytes: p.peakRSS.Load(),
	}
}

// ResetPeakRSS starts a new peak measurement for Stats.PeakRSSBytes.
func (p *Pool) ResetPeakRSS() { p.peakRSS.Store(0) }

func (p *Pool) notePeak(rss int64) {
	for {
		old := p.peakRSS.Load()
		if rss <= old || p.peakRSS.CompareAndSwap(old, rss) {
			return
		}
	}
}

var _ engine.Engine = (*Pool)(nil)

// NewPool starts the workers and waits until they are ready.
func NewPool(ctx context.Context, opts Options) (*Pool, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("worker: Options.Command is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.MaxRSSBytes <= 0 {
		opts.MaxRSSBytes = 768 << 20
	}
	if opts.AddressSpaceBytes == 0 {
		opts.AddressSpaceBytes = 8 << 30
	}
	if opts.Grace <= 0 {
		opts.Grace = 100 * time.Millisecond
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pctx, stop := context.WithCancel(context.Background())
	p := &Pool{opts: opts, log: log, idle: newIdleSet(opts.Workers), ctx: pctx, stop: stop, procs: map[*proc]struct{}{}}
	for range opts.Workers {
		w, err := p.start()
		if err != nil {
			p.Close(ctx)
			return nil, err
		}
		p.idle.put(w)
	}
	return p, nil
}

// proc is one worker process.
type proc struct {
	id     uint64
	pool   *Pool
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tailBuffer
	loaded map[string]bool
	dead   chan struct{} // closed when the process has exited
	killed atomic.Value  // string: why the supervisor killed it
	// busy is set while a call holds the worker; replaced once a
	// replacement has been started for it.
	busy, replaced atomic.Bool
}

func (p *Pool) start() (*proc, error) {
	cmd := exec.Command(p.opts.Command[0], p.opts.Command[1:]...)
	cmd.Env = []string{"GOMAXPROCS=1", "GODEBUG=madvdontneed=1", "PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &proc{id: p.gen.Add(1), pool: p, cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: &tailBuffer{max: 4096}, loaded: map[string]bool{}, dead: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("worker: start %s: %w", p.opts.Command[0], err)
	}
	lim := unix.Rlimit{Cur: p.opts.AddressSpaceBytes, Max: p.opts.AddressSpaceBytes}
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_AS, &lim, nil); err != nil {
		p.log.Warn("cannot limit worker address space", "err", err)
	}
	core := unix.Rlimit{}
	_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_CORE, &core, nil)
	w.busy.Store(true) // until it is first put in the idle set
	p.started.Add(1)
	p.procsMu.Lock()
	p.procs[w] = struct{}{}
	p.procsMu.Unlock()
	go func() {
		_ = cmd.Wait()
		p.procsMu.Lock()
		delete(p.procs, w)
		p.procsMu.Unlock()
		reason := w.killed.Load()
		crashed := reason == nil || reason == reasonCrashed
		if crashed {
			p.crashed.Add(1)
		}
		close(w.dead)
		if crashed && !w.busy.Load() {
			// It died while idle: replace it now rather than when a
			// call finds it dead.
			p.replace(w)
		}
	}()
	// A worker that does not come up in time is killed, which ends the
	// read below.
	slow := time.AfterFunc(startTimeout, func() { w.kill("did not start in time") })
	f, err := readFrame(w.stdout, 0)
	slow.Stop()
	if err != nil || f.kind != kindReady {
		w.kill("did not start")
		return nil, fmt.Errorf("worker: the sandbox worker did not start: %v %s", err, strings.TrimSpace(w.stderr.String()))
	}
	return w, nil
}

// reasonCrashed marks a worker that died on its own mid-request; kill
// then only makes sure it is gone.
const reasonCrashed = "crashed"

func (w *proc) kill(reason string) {
	if w.killed.CompareAndSwap(nil, reason) && reason != reasonCrashed {
		select {
		case <-w.dead: // it died on its own first
		default:
			w.pool.killed.Add(1)
		}
	}
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	_ = w.cmd.Process.Kill()
}

// alive reports whether the process has neither exited nor been killed.
func (w *proc) alive() bool {
	select {
	case <-w.dead:
		return false
	default:
		return w.killed.Load() == nil
	}
}

// idleSet holds idle workers, oldest first; take prefers the longest idle
// worker that already has the wanted module loaded.
type idleSet struct {
	mu    sync.Mutex
	procs []*proc
	avail chan struct{}
}

// newIdleSet makes room for n live workers plus as many dead ones: a
// worker that dies while idle stays in the set (with its token) until
// acquire takes it and drops it, while its replacement is already put.
func newIdleSet(n int) *idleSet { return &idleSet{avail: make(chan struct{}, 2*n+2)} }

func (s *idleSet) put(w *proc) {
	w.busy.Store(false)
	s.mu.Lock()
	s.procs = append(s.procs, w)
	s.mu.Unlock()
	s.avail <- struct{}{}
}

// take removes a worker (nil if there is none: the pool closed); the
// caller has consumed one token from avail.
func (s *idleSet) take(key string) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.procs) == 0 {
		return nil
	}
	// The longest idle worker that has the module: it has had the most
	// time to prepare the module's next instance since its last call.
	i := 0
	for j := range s.procs {
		if s.procs[j].loaded[key] {
			i = j
			break
		}
	}
	w := s.procs[i]
	s.procs = append(s.procs[:i], s.procs[i+1:]...)
	return w
}

// acquire takes an idle, live worker, waiting at most until ctx ends. A
// worker that died while idle (killed from outside, say) is replaced, and
// never handed to a call that would then be blamed for its death.
func (p *Pool) acquire(ctx context.Context, key string) (*proc, error) {
	for {
		if p.ctx.Err() != nil {
			return nil, toolerr.Errorf(toolerr.CodeUnavailable, "the host is shutting down")
		}
		select {
		case <-p.idle.avail:
		default:
			select {
			case <-p.idle.avail:
			case <-ctx.Done():
				return nil, toolerr.Errorf(toolerr.CodeBusy, "every sandbox worker is busy; retry shortly")
			case <-p.ctx.Done():
				return nil, toolerr.Errorf(toolerr.CodeUnavailable, "the host is shutting down")
			}
		}
		w := p.idle.take(key)
		if w == nil {
			return nil, toolerr.Errorf(toolerr.CodeUnavailable, "the host is shutting down")
		}
		if w.alive() {
			w.busy.Store(true)
			return w, nil
		}
		w.kill("replaced")
		p.replace(w)
	}
}

// release returns a healthy worker, or replaces a dead one in the background.
func (p *Pool) release(w *proc) {
	if w.alive() && p.ctx.Err() == nil {
		p.idle.put(w)
		return
	}
	w.kill("replaced")
	p.replace(w)
}

// replace starts a worker in the background to take dead worker w's place,
// once per w whoever notices its death first (the call it was running,
// acquire, or its own exit while idle).
func (p *Pool) replace(w *proc) {
	if !w.replaced.CompareAndSwap(false, true) {
		return
	}
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.closing {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for backoff := 10 * time.Millisecond; ; backoff = min(backoff*2, 2*time.Second) {
			if p.ctx.Err() != nil {
				return
			}
			nw, err := p.start()
			if err == nil {
				p.idle.put(nw)
				return
			}
			p.log.Error("cannot restart sandbox worker", "err", err)
			select {
			case <-time.After(backoff):
			case <-p.ctx.Done():
				return
			}
		}
	}()
}

// Close kills every worker, idle or busy, and waits (until ctx ends) for
// the processes to exit. Calls in flight end with an error.
func (p *Pool) Close(ctx context.Context) error {
	p.lifeMu.Lock()
	p.closing = true
	p.lifeMu.Unlock()
	p.stop()
	p.wg.Wait()
	p.idle.mu.Lock()
	p.idle.procs = nil
	p.idle.mu.Unlock()
	p.procsMu.Lock()
	all := make([]*proc, 0, len(p.procs))
	for w := range p.procs {
		all = append(all, w)
	}
	p.procsMu.Unlock()
	for _, w := range all {
		w.kill("pool closed")
	}
	for _, w := range all {
		select {
		case <-w.dead:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

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

// errNotDelivered means the request could not be written to the worker,
// which therefore never started it: the call may go to another worker.
var errNotDelivered = errors.New("worker: request not delivered")

// roundTrip sends one request and waits for the reply, killing the worker
// if it takes longer than limit or its memory passes the cap.
func (p *Pool) roundTrip(w *proc, kind byte, header any, body []byte, limit time.Duration, maxReply int) (replyHeader, []byte, error) {
	type result struct {
		f   frame
		err error
	}
	done := make(chan result, 1)
	go func() {
		if err := writeFrame(w.stdin, kind, header, body); err != nil {
			done <- result{err: fmt.Errorf("%w: %w", errNotDelivered, err)}
			return
		}
		f, err := readFrame(w.stdout, maxReply)
		done <- result{f, err}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				// The worker closed its end: it died (or wrote garbage,
				// which readFrame refuses before allocating).
				w.kill(reasonCrashed)
				<-w.dead
				if errors.Is(r.err, errNotDelivered) && w.killed.Load() == reasonCrashed {
					return replyHeader{}, nil, r.err
				}
				return replyHeader{}, nil, p.deathError(w, r.err)
			}
			if r.f.kind != kindReply {
				w.kill("protocol error")
				return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeInternal, "sandbox worker sent an unexpected frame")
			}
			var h replyHeader
			if err := json.Unmarshal(r.f.header, &h); err != nil {
				w.kill("protocol error")
				return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeInternal, "sandbox worker sent a malformed reply")
			}
			p.notePeak(h.PeakRSS)
			return h, r.f.body, nil
		case <-timer.C:
			p.notePeak(peakResidentBytes(w.cmd.Process.Pid))
			w.kill("deadline")
			<-done
			return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeTimeout, "the tool did not finish within its deadline; it was stopped")
		case <-tick.C:
			rss := residentBytes(w.cmd.Process.Pid)
			p.notePeak(rss)
			if rss > p.opts.MaxRSSBytes {
				p.notePeak(peakResidentBytes(w.cmd.Process.Pid))
				w.kill("memory")
				<-done
				return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool used more than %d MiB of memory; it was stopped", p.opts.MaxRSSBytes>>20)
			}
		}
	}
}

// deathError explains why a worker died mid-request.
func (p *Pool) deathError(w *proc, err error) error {
	reason, _ := w.killed.Load().(string)
	if p.ctx.Err() != nil {
		return toolerr.Errorf(toolerr.CodeUnavailable, "the host is shutting down")
	}
	head := w.stderr.Head()
	tail := head + "\n" + w.stderr.String()
	switch {
	case reason == "deadline":
		return toolerr.Errorf(toolerr.CodeTimeout, "the tool did not finish within its deadline; it was stopped")
	case reason == "memory", strings.Contains(tail, "out of memory"), strings.Contains(tail, "cannot allocate memory"):
		return toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool exhausted the memory of its sandbox; it was stopped")
	}
	first := strings.SplitN(strings.TrimSpace(head), "\n", 2)[0]
	if first == "" {
		if st := w.cmd.ProcessState; st != nil {
			first = st.String() // e.g. "signal: killed"
		}
	}
	p.log.Warn("sandbox worker died", "err", err, "stderr", first)
	return toolerr.Errorf(toolerr.CodePluginError, "the sandbox running the tool crashed (%s)", firstWords(first))
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

// peakResidentBytes is the process's peak resident memory (VmHWM), 0 if
// it cannot be read.
func peakResidentBytes(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	return parseStatusKB(data, "VmHWM:")
}

// parseStatusKB reads a "Name:   123 kB" line of /proc/PID/status.
func parseStatusKB(status []byte, name string) int64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func residentBytes(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// tailBuffer keeps the first and the last max bytes written to it: a Go
// runtime crash names its cause first and then dumps goroutines.
type tailBuffer struct {
	mu   sync.Mutex
	head []byte
	buf  []byte
	max  int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Head returns the first bytes written.
func (t *tailBuffer) Head() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head)
}

func firstWords(s string) string {
	if s == "" {
		return "no message"
	}
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
