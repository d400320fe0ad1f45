package worker

import (
	"context"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host/toolerr"
)

// idleSet holds idle workers, oldest first; take prefers the longest idle
// worker that already has the wanted module loaded.
type idleSet struct {
	// mu guards procs. A proc in procs belongs to the set; take hands it
	// to one caller, who owns it until put.
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
		w.kill(killReplaced)
		p.replace(w)
	}
}

// release returns a healthy worker, or replaces a dead one in the background.
func (p *Pool) release(w *proc) {
	if w.alive() && p.ctx.Err() == nil {
		p.idle.put(w)
		return
	}
	w.kill(killReplaced)
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
