package mcpserver

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// progressEvery is how often a call whose client sent a progress token
// hears that it is still running.
const progressEvery = time.Second

// progressStream is the one stream of notifications/progress of a call
// whose client sent a progress token (in the request's _meta): "started"
// at once, the tool's own reports (toolhost.progress) as they come, a
// heartbeat every interval in which the tool reported nothing (while the
// call queues and runs), and "finished" before the result.
//
// The spec wants progress to increase with every notification. The value
// is the tool's own: 0 until it reports, then what it reported. A
// heartbeat, a report that does not increase, and "finished" carry the
// last value raised by a hair (bump), which a client shows unchanged; a
// total, once the tool gave one, stays on every later notification.
type progressStream struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	start time.Time

	// Owned by the stream's goroutine (and by stop once it has ended):
	last     float64   // the last value sent
	total    float64   // the tool's total, 0 if none
	lastTool time.Time // when a report of the tool was last sent

	mu      sync.Mutex // guards pending and held: the engine reports, the goroutine sends
	pending host.Progress
	held    bool
	kick    chan struct{} // a report is pending (capacity 1)

	done     chan struct{}
	finished chan struct{}
}

// heartbeat starts the progress stream of a call and returns it; its stop
// sends what is pending and "finished", and waits for the stream to end.
// A stream that continues one stopped by park (resumed: a retry of a call
// that waited for the user's answer) starts after from instead of at 0.
func heartbeat(ctx context.Context, ss *mcp.ServerSession, token any, interval time.Duration, resumed bool, from float64) *progressStream {
	p := &progressStream{
		ctx: ctx, ss: ss, token: token, start: time.Now(),
		kick: make(chan struct{}, 1), done: make(chan struct{}), finished: make(chan struct{}),
	}
	if resumed {
		p.notify(bump(from), "resumed with the user's answer")
	} else {
		p.notify(0, "started")
	}
	go p.run(interval)
	return p
}

func (p *progressStream) run(interval time.Duration) {
	defer close(p.finished)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if time.Since(p.lastTool) >= interval {
				p.notify(bump(p.last), fmt.Sprintf("running for %s", time.Since(p.start).Round(time.Second)))
			}
		case <-p.kick:
			p.sendPending()
		case <-p.done:
			return
		case <-p.ctx.Done():
			return
		}
	}
}

// report hands the stream a report of the tool; it never blocks (the
// stream's goroutine sends it, and a newer report replaces one not sent).
func (p *progressStream) report(r host.Progress) {
	p.mu.Lock()
	p.pending, p.held = r, true
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *progressStream) sendPending() {
	p.mu.Lock()
	r, held := p.pending, p.held
	p.held = false
	p.mu.Unlock()
	if !held {
		return
	}
	v := r.Progress
	if !(v > p.last) {
		v = bump(p.last)
	}
	if r.Total > 0 {
		p.total = r.Total
	}
	p.lastTool = time.Now()
	p.notify(v, r.Message)
}

// park ends the stream of a request whose call now waits for the user's
// answer: the tool's last report, no "finished" (the call has not), and
// the last value sent, for the retry's stream to go on from.
func (p *progressStream) park() float64 {
	close(p.done)
	<-p.finished
	p.sendPending()
	return p.last
}

// stop ends the stream: the tool's last report, then "finished".
func (p *progressStream) stop() {
	close(p.done)
	<-p.finished
	p.sendPending()
	p.notify(bump(p.last), "finished")
}

func (p *progressStream) notify(v float64, msg string) {
	p.last = v
	// A client that went away is the call's business, not ours.
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: v, Total: p.total, Message: msg})
}

// bump is the least increase of v that survives JSON and that a client
// still shows as v.
func bump(v float64) float64 {
	return max(math.Nextafter(v, math.Inf(1)), v+1e-9)
}
