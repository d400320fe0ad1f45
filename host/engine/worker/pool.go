// Package worker runs plugin calls in supervised worker processes.
//
// wazero cannot stop every runaway module (loop-free call trees ignore
// deadlines) and some modules can exhaust the Go process that runs them
// (fatal, unrecoverable out-of-memory). So the host never runs plugin wasm in
// its own process: a Pool keeps long-lived worker processes (`toolhost
// sandbox-worker`), started before calls arrive, each running one call at a
// time. The supervisor enforces what the worker cannot: at the deadline plus
// a short grace it kills the worker, it kills a worker whose resident memory
// passes the cap, it kills the worker of a call whose caller went away, it
// caps the worker's address space, and it replaces any worker that dies. A
// killed call ends with a typed error; other calls and the host are
// unaffected. Workers do not stop running wasm themselves
// (sandbox.InProcess.Supervised: watching every call's context costs a
// goroutine per wasm function call): a call that does not end by its
// deadline, or soon after its caller left, ends by the kill.
//
// A call's deadline (the earlier of its ctx's and the tool's timeout_ms)
// covers everything: waiting for a worker, loading the module into a worker
// that lacks it, instantiating it and running it. Workers are shared fairly
// between plugins (see sched): a plugin with nothing running never waits
// behind other plugins' calls while the pool may still grow.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/host/engine"
)

// MaxPoolWorkers bounds Options.Workers. NewPool starts the workers one
// after another, each a process with its own runtime and memory limit: a
// larger pool takes long to start and spends memory on idle sandboxes.
const MaxPoolWorkers = 256

// Options configure a Pool.
type Options struct {
	// Command starts a worker: the executable and its arguments, e.g.
	// {"/usr/bin/toolhost", "sandbox-worker", "--cache", DIR}.
	Command []string
	// Workers is the number of worker processes kept running, up to
	// MaxPoolWorkers; 0 means 2.
	// One plugin runs in at most all workers but one at once, so a slow or
	// hostile plugin never holds every worker and other plugins' calls keep
	// being answered.
	Workers int
	// MaxWorkers caps the pool when it grows for plugins that have nothing
	// running while every worker is busy; 0 means Workers plus
	// max(Workers, 2). Workers beyond Workers stop after a short idle time.
	MaxWorkers int
	// MaxRSSBytes kills a worker whose resident memory exceeds it during a
	// call; 0 means 768 MiB.
	MaxRSSBytes int64
	// MemoryBudgetBytes bounds the resident memory of all the pool's
	// worker processes together: when they pass it, the request in the
	// largest worker is stopped (memory_limit) and its worker replaced.
	// 0 means DefaultMemoryBudget. Sampled like MaxRSSBytes, so the
	// workers can pass it by what they allocate in 10 ms.
	MemoryBudgetBytes int64
	// AddressSpaceBytes is the worker's RLIMIT_AS; 0 means 8 GiB.
	AddressSpaceBytes uint64
	// Grace is how long past a call's deadline the worker may take to
	// answer before it is killed; 0 means 25 ms.
	Grace time.Duration
	// MeasurePeakRSS has every worker report the peak resident memory of
	// each call (two extra system calls per call), for Stats.
	MeasurePeakRSS bool
	Logger         *slog.Logger
}

// Pool is a engine.Engine whose calls run in worker processes.
type Pool struct {
	opts  Options
	log   *slog.Logger
	sched *sched
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
	specs sync.Map // key → *engine.Spec, for (re)loading into workers
	gen   atomic.Uint64

	// procsMu guards procs, the set of every live worker process, idle or
	// busy: start adds, wait removes, Close and Stats read it. It owns
	// nothing else; a proc's owner is described at type proc.
	procsMu sync.Mutex
	procs   map[*proc]struct{}

	started, killed, crashed atomic.Uint64
	// budget is the memory bound of all workers together (budget.go);
	// budgetKilled counts the requests it stopped.
	budget       budget
	budgetKilled atomic.Uint64
	peakRSS      atomic.Int64
	// calls counts the calls inside Call, waiting for a worker or for its
	// reply: pipes are polled (spinner) only for a call that is alone.
	calls atomic.Int32
	// soloRun counts the calls in a row that came into Call alone (no
	// other call inside it) and right after the one before (within
	// longSpin of its end, lastEnd: time since epoch); an overlapping call
	// or a pause resets it. See longSpin.
	soloRun atomic.Int64
	lastEnd atomic.Int64
	epoch   time.Time
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
	// BudgetKilled counts the requests stopped because the workers
	// together passed Options.MemoryBudgetBytes (also in Killed).
	BudgetKilled uint64
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
		BudgetKilled: p.budgetKilled.Load(),
		PeakRSSBytes: p.peakRSS.Load(),
	}
}

var _ engine.StatsReporter = (*Pool)(nil)

// EngineStats implements engine.StatsReporter.
func (p *Pool) EngineStats() engine.Stats {
	st := p.Stats()
	s := p.sched
	s.mu.Lock()
	idle, waiting := len(s.idle), len(s.waiters)
	running := 0
	for _, n := range s.running {
		running += n
	}
	s.mu.Unlock()
	return engine.Stats{
		Workers: st.Workers, Idle: idle, Running: running, Waiting: waiting,
		Started: st.Started, Killed: st.Killed, Crashed: st.Crashed,
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
	if opts.Workers < 0 || opts.Workers > MaxPoolWorkers {
		return nil, fmt.Errorf("worker: Options.Workers %d is out of range: use 1 to %d, or 0 for 2", opts.Workers, MaxPoolWorkers)
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	if opts.MaxWorkers < opts.Workers {
		opts.MaxWorkers = opts.Workers + max(opts.Workers, 2)
	}
	if opts.MaxRSSBytes <= 0 {
		opts.MaxRSSBytes = 768 << 20
	}
	if opts.MemoryBudgetBytes < 0 {
		return nil, fmt.Errorf("worker: Options.MemoryBudgetBytes %d is negative: give the bytes all workers may hold together, or 0 for %d MiB", opts.MemoryBudgetBytes, DefaultMemoryBudget>>20)
	}
	if opts.MemoryBudgetBytes == 0 {
		opts.MemoryBudgetBytes = DefaultMemoryBudget
	}
	if opts.AddressSpaceBytes == 0 {
		opts.AddressSpaceBytes = 8 << 30
	}
	if opts.Grace <= 0 {
		opts.Grace = 25 * time.Millisecond
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pctx, stop := context.WithCancel(context.Background())
	p := &Pool{opts: opts, log: log, ctx: pctx, stop: stop, procs: map[*proc]struct{}{}, epoch: time.Now()}
	p.sched = newSched(p)
	for range opts.Workers {
		w, err := p.start()
		if err != nil {
			p.Close(ctx)
			return nil, err
		}
		p.sched.mu.Lock()
		p.sched.live++
		p.sched.putLocked(w)
		p.sched.mu.Unlock()
	}
	p.wg.Add(1)
	go p.retire()
	return p, nil
}

// Close kills every worker, idle or busy, and waits (until ctx ends) for
// the processes to exit. Calls in flight end with an error.
func (p *Pool) Close(ctx context.Context) error {
	s := p.sched
	s.mu.Lock()
	s.closed = true // no worker starts from now on (spawnLocked)
	s.idle = nil
	s.mu.Unlock()
	p.stop()
	// Killing every process first also ends starts in progress, so the
	// wait below does not wait for startTimeout.
	all := p.killAll()
	p.wg.Wait()
	all = append(all, p.killAll()...)
	for _, w := range all {
		select {
		case <-w.dead:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (p *Pool) killAll() []*proc {
	p.procsMu.Lock()
	all := make([]*proc, 0, len(p.procs))
	for w := range p.procs {
		all = append(all, w)
	}
	p.procsMu.Unlock()
	for _, w := range all {
		w.kill(killPoolClosing)
	}
	return all
}
