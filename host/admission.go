package host

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host/toolerr"
)

// Defaults of the admission bounds (Options).
const (
	DefaultMaxInFlight          = 64
	DefaultMaxInFlightPerPlugin = 32
	DefaultMaxQueued            = 1024
)

// admission bounds the calls past the front door: at most maxAll running
// overall and maxPlugin of one plugin. A call beyond that waits in its
// plugin's FIFO queue (bounded by its deadline); free slots go to the
// queues in turn, so a plugin with a thousand waiting calls delays another
// plugin's call by at most one turn. Only a full queue answers busy at once.
//
// A plugin with no call running is always admitted, even beyond maxAll:
// otherwise two plugins whose calls spin until their deadline could hold
// every slot, and a third plugin's call would wait for one of those
// deadlines. So running exceeds maxAll by at most one call per plugin.
//
// Running here means admitted to the pipeline: the engine then shares its
// workers among the admitted calls (fairly across plugins, see
// host/engine).
type admission struct {
	maxAll, maxPlugin  int
	maxQueued, maxPerQ int
	mu                 sync.Mutex // guards everything below
	running            int
	perPlugin          map[string]int
	queues             map[string][]*waiter // FIFO per plugin; never empty in the map
	turn               []string             // plugins with waiters, served in this order
	queued             int
	idle               chan struct{} // closed when running drops to 0; nil while idle
}

type waiter struct {
	plugin  string
	ready   chan struct{} // closed when the slot is granted
	granted bool          // set under admission.mu with ready closed
}

func newAdmission(maxAll, maxPlugin, maxQueued int) *admission {
	return &admission{
		maxAll: maxAll, maxPlugin: min(maxPlugin, maxAll), maxQueued: maxQueued,
		// One plugin may fill at most three quarters of the queue, so
		// that others can still wait instead of being refused.
		maxPerQ:   max(1, maxQueued*3/4),
		perPlugin: map[string]int{}, queues: map[string][]*waiter{},
	}
}

// Load is a snapshot of admission.
type Load struct {
	Running int // admitted calls not yet answered
	Queued  int // calls waiting for admission
}

func (a *admission) load() Load {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Load{Running: a.running, Queued: a.queued}
}

// errQueueFull and errGaveUp are how admit fails; the pipeline words
// the typed error (it knows the call's deadline and caller).
var (
	errQueueFull       = errors.New("queue full")
	errPluginQueueFull = errors.New("plugin's queue full")
	errGaveUp          = errors.New("gave up waiting")
)

// admit takes a slot for plugin, waiting until ctx ends. front puts the
// call at the head of its plugin's queue (a call that gave its slot back
// while a person decided on it). release must be called exactly once
// after a nil error.
func (a *admission) admit(ctx context.Context, plugin string, front bool) (release func(), err error) {
	a.mu.Lock()
	if a.eligible(plugin) && len(a.queues[plugin]) == 0 {
		// Every waiter that could run would already have been granted a
		// slot when it freed, so nobody is overtaken here.
		a.take(plugin)
		a.mu.Unlock()
		return a.releaser(plugin), nil
	}
	if a.queued >= a.maxQueued {
		a.mu.Unlock()
		return nil, errQueueFull
	}
	if len(a.queues[plugin]) >= a.maxPerQ {
		a.mu.Unlock()
		return nil, errPluginQueueFull
	}
	w := &waiter{plugin: plugin, ready: make(chan struct{})}
	q := a.queues[plugin]
	if len(q) == 0 {
		a.turn = append(a.turn, plugin)
	}
	if front {
		q = append([]*waiter{w}, q...)
	} else {
		q = append(q, w)
	}
	a.queues[plugin] = q
	a.queued++
	a.mu.Unlock()

	select {
	case <-w.ready:
		return a.releaser(plugin), nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.granted { // granted while ctx ended: hand the slot on
		a.put(plugin)
		return nil, errGaveUp
	}
	a.remove(w)
	return nil, errGaveUp
}

func (a *admission) releaser(plugin string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			a.put(plugin)
			a.mu.Unlock()
		})
	}
}

// take and put account one running call; mu is held.
func (a *admission) take(plugin string) {
	a.running++
	a.perPlugin[plugin]++
	if a.idle == nil {
		a.idle = make(chan struct{})
	}
}

func (a *admission) put(plugin string) {
	a.running--
	if a.perPlugin[plugin]--; a.perPlugin[plugin] == 0 {
		delete(a.perPlugin, plugin)
	}
	a.dispatch()
	if a.running == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
}

// eligible says whether a call of plugin may start now; mu is held.
func (a *admission) eligible(plugin string) bool {
	n := a.perPlugin[plugin]
	return n < a.maxPlugin && (a.running < a.maxAll || n == 0)
}

// dispatch grants free slots to waiters, one plugin's turn at a time.
// mu is held.
func (a *admission) dispatch() {
	for len(a.turn) > 0 {
		granted := false
		for i := 0; i < len(a.turn); i++ {
			p := a.turn[i]
			if !a.eligible(p) {
				continue
			}
			q := a.queues[p]
			w := q[0]
			a.queues[p] = q[1:]
			a.queued--
			// p goes to the back of the turn (or leaves it when its
			// queue is empty).
			a.turn = append(a.turn[:i], a.turn[i+1:]...)
			if len(a.queues[p]) > 0 {
				a.turn = append(a.turn, p)
			} else {
				delete(a.queues, p)
			}
			a.take(p)
			w.granted = true
			close(w.ready)
			granted = true
			break
		}
		if !granted {
			return // every waiting plugin is at its share, or no slot is free
		}
	}
}

// remove takes a waiter that gave up out of its queue; mu is held.
func (a *admission) remove(w *waiter) {
	q := a.queues[w.plugin]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
			a.queued--
			break
		}
	}
	if len(q) > 0 {
		a.queues[w.plugin] = q
		return
	}
	delete(a.queues, w.plugin)
	for i, p := range a.turn {
		if p == w.plugin {
			a.turn = append(a.turn[:i], a.turn[i+1:]...)
			break
		}
	}
}

// waitIdle returns when no admitted call is running, or with ctx's error.
func (a *admission) waitIdle(ctx context.Context) error {
	for {
		a.mu.Lock()
		idle := a.idle
		a.mu.Unlock()
		if idle == nil {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
		// Closed: the loop reads idle again, a new channel if a call
		// started meanwhile.
	}
}

// refusal words why admission failed, as the typed error of the call.
func refusal(err error, caller context.Context, plugin string, waited time.Duration, a *admission) *toolerr.Error {
	switch {
	case errors.Is(err, errQueueFull):
		return toolerr.Errorf(toolerr.CodeBusy, "toolhost is running all the calls it admits at once and %d more are waiting, its limit; retry in a second", a.maxQueued)
	case errors.Is(err, errPluginQueueFull):
		return toolerr.Errorf(toolerr.CodeBusy, "plugin %s is running %d calls, its share, and %d more are waiting, its limit; retry in a second", plugin, a.maxPlugin, a.maxPerQ)
	case errors.Is(caller.Err(), context.Canceled):
		return toolerr.Errorf(toolerr.CodeCancelled, "the caller cancelled the call while it waited %v for a free slot", waited.Round(time.Millisecond))
	default:
		return toolerr.Errorf(toolerr.CodeBusy, "the call of plugin %s waited %v, its whole deadline, for a free slot (toolhost admits %d calls at once, %d of one plugin); retry later", plugin, waited.Round(time.Millisecond), a.maxAll, a.maxPlugin)
	}
}
