package httpapi

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/toolhost/toolhost/host"
)

// entryGate stands between the API's front ends (the JSON routes, MCP at
// /mcp) and the backend. It labels each call with its entry point and
// counts the calls this API started, so Shutdown can wait for them.
// Everything else about a call (admission, deadline, validation, metrics,
// the call log) is the host pipeline's, the same for every entry point.
type entryGate struct {
	Backend
	entry   host.Entry
	running *running
}

func (g entryGate) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	g.running.add()
	defer g.running.done()
	return g.Backend.Call(host.WithEntry(ctx, g.entry), tool, args)
}

// refusalRecorder is what a Backend implements to record the calls an
// entry point refused before the pipeline could run them (*host.Host
// does: RecordRefused).
type refusalRecorder interface {
	RecordRefused(ctx context.Context, tool string, request []byte, err error)
}

// refused records a call whose request could not be used, labelled with
// this gate's entry point, when the backend records such calls.
func (g entryGate) refused(ctx context.Context, tool string, request []byte, err error) {
	if r, ok := g.Backend.(refusalRecorder); ok {
		r.RecordRefused(host.WithEntry(ctx, g.entry), tool, request, err)
	}
}

// running counts calls in progress; idle is closed when none is.
type running struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // nil while calls run
}

func newRunning() *running {
	r := &running{idle: make(chan struct{})}
	close(r.idle)
	return r
}

func (r *running) add() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n++; r.n == 1 {
		r.idle = make(chan struct{})
	}
}

func (r *running) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n--; r.n == 0 {
		close(r.idle)
	}
}

// count is the number in progress now.
func (r *running) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// waitIdle returns when no call is running, or with ctx's error.
func (r *running) waitIdle(ctx context.Context) error {
	for {
		r.mu.Lock()
		idle, n := r.idle, r.n
		r.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
