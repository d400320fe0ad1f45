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

	"github.com/toolhost/toolhost/host/sandbox"
	"github.com/toolhost/toolhost/plugin"
)

// Options configure a Pool.
type Options struct {
	// Command starts a worker: the executable and its arguments, e.g.
	// {"/usr/bin/toolhost", "sandbox-worker", "--cache", DIR}.
	Command []string
	// Workers is the number of worker processes; 0 means 2.
	Workers int
	// MaxRSSBytes kills a worker whose resident memory exceeds it during a
	// call; 0 means 768 MiB.
	MaxRSSBytes int64
	// AddressSpaceBytes is the worker's RLIMIT_AS; 0 means 8 GiB.
	AddressSpaceBytes uint64
	// Grace is how long past a call's deadline the worker may take before
	// it is killed; 0 means 100 ms.
	Grace  time.Duration
	Logger *slog.Logger
}

// Pool is a sandbox.Engine whose calls run in worker processes.
type Pool struct {
	opts  Options
	log   *slog.Logger
	idle  *idleSet
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
	specs sync.Map // key → *sandbox.Spec, for (re)loading into workers
	gen   atomic.Uint64
}

var _ sandbox.Engine = (*Pool)(nil)

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
	p := &Pool{opts: opts, log: log, idle: newIdleSet(opts.Workers), ctx: pctx, stop: stop}
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
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tailBuffer
	loaded map[string]bool
	dead   chan struct{} // closed when the process has exited
	killed atomic.Value  // string: why the supervisor killed it
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
	w := &proc{id: p.gen.Add(1), cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: &tailBuffer{max: 4096}, loaded: map[string]bool{}, dead: make(chan struct{})}
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
	go func() {
		_ = cmd.Wait()
		close(w.dead)
	}()
	f, err := readFrame(w.stdout, 0)
	if err != nil || f.kind != kindReady {
		w.kill("did not start")
		return nil, fmt.Errorf("worker: the sandbox worker did not start: %v %s", err, strings.TrimSpace(w.stderr.String()))
	}
	return w, nil
}

func (w *proc) kill(reason string) {
	w.killed.CompareAndSwap(nil, reason)
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	_ = w.cmd.Process.Kill()
}

// idleSet holds idle workers; get prefers the most recently used worker
// that already has the wanted module loaded.
type idleSet struct {
	mu    sync.Mutex
	procs []*proc
	avail chan struct{}
}

func newIdleSet(n int) *idleSet { return &idleSet{avail: make(chan struct{}, n)} }

func (s *idleSet) put(w *proc) {
	s.mu.Lock()
	s.procs = append(s.procs, w)
	s.mu.Unlock()
	s.avail <- struct{}{}
}

// take removes a worker; the caller has consumed one token from avail.
func (s *idleSet) take(key string) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.procs) - 1
	for j := i; j >= 0; j-- {
		if s.procs[j].loaded[key] {
			i = j
			break
		}
	}
	w := s.procs[i]
	s.procs = append(s.procs[:i], s.procs[i+1:]...)
	return w
}

// acquire takes an idle worker, waiting at most until ctx ends.
func (p *Pool) acquire(ctx context.Context, key string) (*proc, error) {
	select {
	case <-p.idle.avail:
		return p.idle.take(key), nil
	default:
	}
	select {
	case <-p.idle.avail:
		return p.idle.take(key), nil
	case <-ctx.Done():
		return nil, sandbox.Errorf(sandbox.CodeBusy, "every sandbox worker is busy; retry shortly")
	case <-p.ctx.Done():
		return nil, sandbox.Errorf(sandbox.CodeUnavailable, "the host is shutting down")
	}
}

// release returns a healthy worker, or replaces a dead one in the background.
func (p *Pool) release(w *proc) {
	alive := w.killed.Load() == nil && p.ctx.Err() == nil
	select {
	case <-w.dead:
		alive = false
	default:
	}
	if alive {
		p.idle.put(w)
		return
	}
	w.kill("replaced")
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

// Close kills every worker.
func (p *Pool) Close(ctx context.Context) error {
	p.stop()
	p.wg.Wait()
	p.idle.mu.Lock()
	defer p.idle.mu.Unlock()
	for _, w := range p.idle.procs {
		w.stdin.Close()
		w.kill("pool closed")
	}
	p.idle.procs = nil
	return nil
}

// Compile loads the module into one worker, so that a module that does not
// compile (or kills the worker while compiling) is refused now.
func (p *Pool) Compile(ctx context.Context, spec sandbox.Spec) (sandbox.Module, error) {
	s := spec
	p.specs.Store(spec.Key, &s)
	w, err := p.acquire(ctx, s.Key)
	if err != nil {
		return nil, err
	}
	err = p.load(w, &s)
	p.release(w)
	if err != nil {
		return nil, err
	}
	return &module{pool: p, spec: &s}, nil
}

func (p *Pool) load(w *proc, spec *sandbox.Spec) error {
	h := loadHeader{
		Key: spec.Key, Name: spec.Name, MemoryPages: spec.Limits.MemoryPages, TimeoutMS: spec.Limits.TimeoutMS,
		MaxOutput: spec.Limits.MaxOutputBytes, Hosts: spec.Permissions.AllowedHosts, Paths: spec.Permissions.AllowedPaths,
		Exports: spec.Exports, Private: spec.AllowPrivateNetwork,
	}
	// Compiling a large module can take seconds; a module that makes the
	// compiler run away is stopped by the same watchdogs as a call.
	rh, _, err := p.roundTrip(w, kindLoad, h, spec.Wasm, 60*time.Second, int(plugin.MaxOutputBytes))
	if err != nil {
		if se := (*sandbox.Error)(nil); errors.As(err, &se) && se.Code == sandbox.CodeTimeout {
			return sandbox.Errorf(sandbox.CodeInvalidModule, "compiling the module took too long")
		}
		var se *sandbox.Error
		if errors.As(err, &se) && se.Code == sandbox.CodeMemoryLimit {
			return sandbox.Errorf(sandbox.CodeInvalidModule, "compiling the module used too much memory")
		}
		return err
	}
	if rh.Code != "" {
		return &sandbox.Error{Code: sandbox.Code(rh.Code), Message: rh.Message}
	}
	w.loaded[spec.Key] = true
	return nil
}

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
			done <- result{err: err}
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
				w.kill("protocol error")
				<-w.dead
				return replyHeader{}, nil, p.deathError(w, r.err)
			}
			if r.f.kind != kindReply {
				w.kill("protocol error")
				return replyHeader{}, nil, sandbox.Errorf(sandbox.CodeInternal, "sandbox worker sent an unexpected frame")
			}
			var h replyHeader
			if err := json.Unmarshal(r.f.header, &h); err != nil {
				w.kill("protocol error")
				return replyHeader{}, nil, sandbox.Errorf(sandbox.CodeInternal, "sandbox worker sent a malformed reply")
			}
			return h, r.f.body, nil
		case <-timer.C:
			w.kill("deadline")
			<-done
			return replyHeader{}, nil, sandbox.Errorf(sandbox.CodeTimeout, "the tool did not finish within its deadline; it was stopped")
		case <-tick.C:
			if rss := residentBytes(w.cmd.Process.Pid); rss > p.opts.MaxRSSBytes {
				w.kill("memory")
				<-done
				return replyHeader{}, nil, sandbox.Errorf(sandbox.CodeMemoryLimit, "the tool used more than %d MiB of memory; it was stopped", p.opts.MaxRSSBytes>>20)
			}
		}
	}
}

// deathError explains why a worker died mid-request.
func (p *Pool) deathError(w *proc, err error) error {
	reason, _ := w.killed.Load().(string)
	tail := w.stderr.Head() + "\n" + w.stderr.String()
	switch {
	case reason == "deadline":
		return sandbox.Errorf(sandbox.CodeTimeout, "the tool did not finish within its deadline; it was stopped")
	case reason == "memory", strings.Contains(tail, "out of memory"), strings.Contains(tail, "cannot allocate memory"):
		return sandbox.Errorf(sandbox.CodeMemoryLimit, "the tool exhausted the memory of its sandbox; it was stopped")
	}
	first := strings.SplitN(strings.TrimSpace(w.stderr.Head()), "\n", 2)[0]
	p.log.Warn("sandbox worker died", "err", err, "stderr", first)
	return sandbox.Errorf(sandbox.CodePluginError, "the sandbox running the tool crashed (%s)", firstWords(first))
}

type module struct {
	pool *Pool
	spec *sandbox.Spec
}

// Call implements sandbox.Module.
func (m *module) Call(ctx context.Context, export string, input []byte) ([]byte, error) {
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
	h, out, err := p.roundTrip(w, kindCall, callHeader{Key: m.spec.Key, Export: export}, input, deadline, int(m.spec.Limits.MaxOutputBytes))
	if err != nil {
		var se *sandbox.Error
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, sandbox.Errorf(sandbox.CodeInternal, "%v", err)
	}
	if h.Code != "" {
		return nil, &sandbox.Error{Code: sandbox.Code(h.Code), Message: h.Message}
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

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
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
