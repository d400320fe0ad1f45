package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressEvery is how often a call whose client sent a progress token
// hears that it is still running.
const progressEvery = time.Second

// heartbeat tells the client that a call is alive, when it asked for
// progress (a progressToken in the request's _meta): once at the start,
// every interval while the call queues and runs, and once at the end.
// Progress is the milliseconds since the start, so it increases as the
// spec requires; there is no total (a tool does not say how far it is).
// The returned stop sends the last notification before the result goes
// out, and waits for the ticker to end.
func heartbeat(ctx context.Context, ss *mcp.ServerSession, token any, interval time.Duration) (stop func()) {
	start := time.Now()
	var mu sync.Mutex // orders notifications and guards last
	last := -1.0
	send := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		p := float64(time.Since(start).Milliseconds())
		if p <= last {
			p = last + 1
		}
		last = p
		// A client that went away is the call's business, not ours.
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Message: msg})
	}
	send("started")
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				send(fmt.Sprintf("running for %s", time.Since(start).Round(time.Second)))
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		send("finished")
	}
}
