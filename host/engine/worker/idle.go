package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
)

// sched hands idle workers to calls, fairly across plugins.
//
// The rules (RATIONALE.md, "Fair workers"):
//   - A call of a plugin that has nothing running (a "first" call) may take
//     any idle worker, so it passes the waiting calls that may not.
//   - A call of a plugin that already runs (a "more" call) may take an idle
//     worker only while another one stays idle: one worker is kept for
//     plugins with nothing running. So one plugin alone uses at most all
//     workers but one.
//   - When a first call finds no idle worker, or takes the last one, the
//     pool grows by one worker (up to MaxWorkers), so that any number of
//     busy plugins (up to the cap) cannot keep a plugin with nothing
//     running waiting for a worker; workers beyond Workers retire after
//     retireAfter idle.
//
// Calls that may take a worker get it in order of arrival; every call
// waits at most until its deadline.
type sched struct {
	p *Pool
	// mu guards everything below. A proc in idle belongs to the sched;
	// one handed to a call (take) belongs to that call until release.
	mu      sync.Mutex
	idle    []*proc   // idle workers, longest idle first
	waiters []*waiter // calls waiting for a worker, oldest first
	running map[string]int
	// live counts the workers alive or starting that the pool has not
	// dropped; starting those being started.
	live, starting int
	closed         bool
}

// waiter is a call waiting for a worker. A worker handed to it is sent on
// got (buffered) under sched.mu, and its plugin counted as running.
type waiter struct {
	plugin, key string
	got         chan *proc
}

// reserve is how many idle workers "more" calls leave for plugins with
// nothing running.
const reserve = 1

// retireAfter is how long a worker beyond Options.Workers stays idle
// before it is stopped.
const retireAfter = 2 * time.Second

func newSched(p *Pool) *sched { return &sched{p: p, running: map[string]int{}} }

// mayTake reports whether a call of plugin may take an idle worker now.
func (s *sched) mayTake(plugin string) bool {
	if s.running[plugin] == 0 {
		return len(s.idle) > 0
	}
	return len(s.idle) > reserve
}

// takeLocked removes the most recently idle worker that has module key
// loaded, or else the most recently idle of those with the fewest modules
// loaded (so that a call does not take, and a spinning call not get killed
// in, the warm worker of another plugin while a bare one is idle), and
// counts plugin as running. Most recent first: back-to-back calls of a
// tool go to the worker that just answered, whose caches are warm and
// which may still be polling for its next request (spinner), and the
// workers that stay cold are the ones the retirer stops. (A worker's
// instance is reset before it answers, so a longer-idle one has nothing
// more ready.)
func (s *sched) takeLocked(plugin, key string) *proc {
	i := -1
	for j := len(s.idle) - 1; j >= 0; j-- {
		w := s.idle[j]
		if w.loaded[key] {
			i = j
			break
		}
		if i < 0 || len(w.loaded) < len(s.idle[i].loaded) {
			i = j
		}
	}
	w := s.idle[i]
	s.idle = slices.Delete(s.idle, i, i+1)
	s.running[plugin]++
	return w
}

// dispatchLocked hands idle workers to the waiters that may take them, in
// order of arrival, then grows the pool for the first calls that still
// wait. (While only the kept worker is idle, only a plugin with nothing
// running may take it, whatever its place in the queue.)
func (s *sched) dispatchLocked() {
	for len(s.idle) > 0 {
		i := slices.IndexFunc(s.waiters, func(wt *waiter) bool { return s.mayTake(wt.plugin) })
		if i < 0 {
			break
		}
		wt := s.waiters[i]
		s.waiters = slices.Delete(s.waiters, i, i+1)
		wt.got <- s.takeLocked(wt.plugin, wt.key)
	}
	s.growLocked()
}

// growLocked starts workers for the first calls that wait and, while any
// call runs, to keep one worker idle for the next plugin, up to the cap.
func (s *sched) growLocked() {
	want := 0
	for _, wt := range s.waiters {
		if s.running[wt.plugin] == 0 {
			want++
		}
	}
	// A pool of one worker (a one-shot command) runs one call at a time:
	// keeping a second one ready would be a wasted process start.
	if len(s.idle) == 0 && len(s.running) > 0 && s.p.opts.Workers > 1 {
		want++
	}
	for s.starting < want && s.live < s.p.opts.MaxWorkers && !s.closed {
		s.spawnLocked(false)
	}
}

// spawnLocked starts a worker in the background; it joins the idle set
// when ready. A replacement (retry) keeps trying, with backoff, until the
// pool closes; a worker started to grow the pool tries once.
func (s *sched) spawnLocked(retry bool) {
	s.live++
	s.starting++
	p := s.p
	p.wg.Add(1) // under mu with closed false: Close's wg.Wait comes after
	go func() {
		defer p.wg.Done()
		for backoff := 10 * time.Millisecond; ; backoff = min(backoff*2, 2*time.Second) {
			w, err := p.start()
			if err == nil {
				s.mu.Lock()
				s.starting--
				if s.closed {
					s.mu.Unlock()
					w.kill(killPoolClosing)
					return
				}
				s.putLocked(w)
				s.dispatchLocked()
				s.mu.Unlock()
				return
			}
			s.mu.Lock()
			closing := s.closed
			s.mu.Unlock()
			if !closing && p.ctx.Err() == nil {
				// A start the pool's Close cut short is no failure.
				p.log.Error("cannot start sandbox worker", "err", err)
			}
			if !retry || p.ctx.Err() != nil {
				s.mu.Lock()
				s.starting--
				s.live--
				s.mu.Unlock()
				return
			}
			select {
			case <-time.After(backoff):
			case <-p.ctx.Done():
			}
		}
	}()
}

func (s *sched) putLocked(w *proc) {
	w.idleSince = time.Now()
	s.idle = append(s.idle, w)
}

// acquire takes a live worker for a call of plugin (module key), waiting
// at most until ctx ends (then errNoWorker). A worker that died while idle (killed from
// outside, say) is replaced, and never handed to a call that would then be
// blamed for its death.
func (p *Pool) acquire(ctx context.Context, plugin, key string) (*proc, error) {
	s := p.sched
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errShuttingDown()
		}
		var w *proc
		var wt *waiter
		if s.mayTake(plugin) {
			w = s.takeLocked(plugin, key)
		} else {
			wt = &waiter{plugin: plugin, key: key, got: make(chan *proc, 1)}
			s.waiters = append(s.waiters, wt)
		}
		s.growLocked()
		s.mu.Unlock()
		if wt != nil {
			select {
			case w = <-wt.got:
			case <-ctx.Done():
				s.mu.Lock()
				if i := slices.Index(s.waiters, wt); i >= 0 {
					s.waiters = slices.Delete(s.waiters, i, i+1)
					s.mu.Unlock()
					return nil, errNoWorker
				}
				s.mu.Unlock()
				// A worker was handed over as ctx ended: give it back.
				p.release(<-wt.got, plugin)
				return nil, errNoWorker
			case <-p.ctx.Done():
				return nil, errShuttingDown()
			}
		}
		if w.alive() {
			return w, nil
		}
		p.release(w, plugin)
	}
}

// errNoWorker means ctx ended while the call waited for a worker; the
// call maps it to its error with waitError.
var errNoWorker = errors.New("worker: no worker before ctx ended")

// waitError is the error of a call that got no worker before ctx (the
// call's budget, derived from caller) ended: cancelled when the caller went
// away, busy when the caller's own deadline passed first (the host had no
// room in time), timeout when the tool's timeout_ms was spent waiting.
func waitError(caller, ctx context.Context) error {
	switch {
	case errors.Is(caller.Err(), context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return engine.Cancelled()
	case caller.Err() != nil:
		return toolerr.Errorf(toolerr.CodeBusy, "every sandbox worker this tool may use stayed busy until the call's deadline; retry shortly")
	}
	return toolerr.Errorf(toolerr.CodeTimeout, "the tool's timeout passed while it waited for a sandbox worker (every worker it may use was busy); retry shortly")
}

func errShuttingDown() error {
	return toolerr.Errorf(toolerr.CodeUnavailable, "the host is shutting down")
}

// release returns w after a call of plugin: a healthy worker goes back to
// the idle set; a dead one, or one whose priority a long call lowered,
// is dropped (and replaced in the background).
func (p *Pool) release(w *proc, plugin string) {
	s := p.sched
	s.mu.Lock()
	if s.running[plugin]--; s.running[plugin] <= 0 {
		delete(s.running, plugin)
	}
	ok := w.alive() && !s.closed && !w.retire.Load()
	if ok {
		s.putLocked(w)
	}
	s.dispatchLocked()
	s.mu.Unlock()
	if !ok {
		reason := killReplaced
		if w.retire.Load() {
			reason = killRetired
		}
		w.kill(reason)
		p.drop(w)
	}
}

// drop forgets w, which is dead, dying or retired, once whoever notices
// first (the call it ran, acquire, its own exit while idle, the retirer),
// and starts a replacement when the pool is below Options.Workers.
func (p *Pool) drop(w *proc) {
	if !w.dropped.CompareAndSwap(false, true) {
		return
	}
	s := p.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = slices.DeleteFunc(s.idle, func(x *proc) bool { return x == w })
	s.live--
	if !s.closed && s.live < p.opts.Workers {
		s.spawnLocked(true)
	}
	s.growLocked()
}

// retire stops the workers beyond Options.Workers that have been idle for
// retireAfter, keeping the reserve; it runs until the pool closes.
func (p *Pool) retire() {
	defer p.wg.Done()
	tick := time.NewTicker(retireAfter / 4)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-p.ctx.Done():
			return
		}
		s := p.sched
		var old []*proc
		s.mu.Lock()
		for s.live > p.opts.Workers && len(s.idle) > reserve && time.Since(s.idle[0].idleSince) > retireAfter {
			w := s.idle[0]
			s.idle = s.idle[1:]
			if w.dropped.CompareAndSwap(false, true) {
				s.live--
				old = append(old, w)
			}
		}
		s.mu.Unlock()
		for _, w := range old {
			w.kill(killRetired)
		}
	}
}
