package govern

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// DefaultApprovalTimeout bounds how long an "ask" call waits for a person
// (serve --approval-timeout).
const DefaultApprovalTimeout = 2 * time.Minute

// DefaultMaxPending bounds the calls that wait for a person at once. A
// waiting call holds no admission slot (a person may take minutes), so
// without a bound a client with the token could park calls without end.
const DefaultMaxPending = 256

// ErrTooManyPending is Ask's error when MaxPending calls already wait.
var ErrTooManyPending = errors.New("calls already wait for approval, the most that may")

// ErrNoSuchApproval is returned for an ID that is not pending (decided,
// timed out, its caller gone, or never there).
var ErrNoSuchApproval = errors.New("no such pending approval")

// ErrShuttingDown is Ask's error once Close was called: the process is
// stopping, so nobody is left to decide (its control socket and HTTP API
// are closing) and a waiting call must not hold the shutdown up until its
// approval timeout.
var ErrShuttingDown = errors.New("toolhost is shutting down, so nobody can approve calls in it now")

// NoSuchApprovalError is Decide's error for an id that is not pending
// (errors.Is ErrNoSuchApproval).
func NoSuchApprovalError(id string) error {
	return fmt.Errorf("%w: %q (see `toolhost approvals list`; it may have been decided, timed out or its caller gone)", ErrNoSuchApproval, id)
}

// Pending is a call waiting for a person.
type Pending struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Plugin    string          `json:"plugin"`
	Arguments json.RawMessage `json:"arguments"`
	Entry     string          `json:"entry"`
	Since     time.Time       `json:"since"`
}

// Answer is a person's decision.
type Answer struct {
	Approve bool
	Reason  string
	// By is who decided: "operator" (CLI, HTTP) or "mcp-client"
	// (elicitation).
	By string
	// Via is the entry point the decision came through: "cli" (the
	// control socket), "http" (POST /v1/approvals/{id}), or, for the MCP
	// client's user, the call's own entry. The audit log records it: the
	// HTTP API's token also lets an agent decide its own calls.
	Via string
}

// Elicitor asks the user of the client that made a call (MCP elicitation).
// It returns an error when the client cannot be asked; the call then
// waits for an operator.
type Elicitor func(ctx context.Context, p Pending) (Answer, error)

type elicitorKey struct{}

// WithElicitor labels a call's ctx with a way to ask its client's user.
func WithElicitor(ctx context.Context, e Elicitor) context.Context {
	return context.WithValue(ctx, elicitorKey{}, e)
}

// ElicitorOf returns the Elicitor ctx is labelled with, or nil. A front end
// that forwards calls to another process (the control socket) uses it to
// carry the question across.
func ElicitorOf(ctx context.Context) Elicitor {
	e, _ := ctx.Value(elicitorKey{}).(Elicitor)
	return e
}

// Approvals holds the calls that wait for a person. It is safe for
// concurrent use.
type Approvals struct {
	Timeout time.Duration
	// MaxPending bounds the calls waiting at once (0: DefaultMaxPending).
	MaxPending int
	// OnDecide, when set, is told every decision (for the audit log)
	// before the waiting call goes on.
	OnDecide func(p Pending, a Answer)
	Now      func() time.Time

	mu      sync.Mutex // guards pending, closed and closing
	pending map[string]*waiter
	closed  bool
	closing chan struct{} // closed by Close; made lazily, under mu
}

type waiter struct {
	p       Pending
	answer  chan Answer // buffered 1: the first decision wins
	decided bool        // under Approvals.mu: a decision took it
}

// Outcome of Ask.
type Outcome struct {
	Answer
	TimedOut bool
	Waited   time.Duration
}

// Ask registers p and waits for a decision: from an operator (Decide),
// from the client's user when ctx carries an Elicitor, or until Timeout
// (then TimedOut, not approved). It returns ctx's error when the caller
// goes away first, ErrTooManyPending (at once) when MaxPending calls
// already wait, and ErrShuttingDown when Close is called before a decision
// (or was called before Ask). Once the wait ended no decision is taken;
// one taken as it ended (already audited, and reported to whoever decided)
// is the outcome, with ctx's error too when the caller left.
func (a *Approvals) Ask(ctx context.Context, p Pending) (Outcome, error) {
	now := a.now()
	p.ID = newID()
	p.Since = now
	w := &waiter{p: p, answer: make(chan Answer, 1)}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return Outcome{}, ErrShuttingDown
	}
	if a.pending == nil {
		a.pending = map[string]*waiter{}
	}
	closing := a.closingLocked()
	max := a.MaxPending
	if max <= 0 {
		max = DefaultMaxPending
	}
	if len(a.pending) >= max {
		a.mu.Unlock()
		return Outcome{}, fmt.Errorf("%d %w", max, ErrTooManyPending)
	}
	a.pending[p.ID] = w
	a.mu.Unlock()
	// Every way out takes w out of pending: a decision (decide), or end.

	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	if e := ElicitorOf(ctx); e != nil {
		ectx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			ans, err := e(ectx, p)
			if err != nil {
				return // the client cannot be asked: an operator decides
			}
			ans.By, ans.Via = "mcp-client", p.Entry
			a.decide(p.ID, ans)
		}()
	}
	var ended error // why the wait ended without a decision
	timedOut := false
	select {
	case ans := <-w.answer:
		return Outcome{Answer: ans, Waited: a.now().Sub(now)}, nil
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		ended = ctx.Err()
	case <-closing:
		ended = ErrShuttingDown
	}
	waited := a.now().Sub(now)
	if !a.end(w) {
		// A decision took the call first: the operator was told it
		// counted and it was audited (OnDecide), so it is the outcome
		// (its answer is on its way), whatever ended the wait just
		// after; but a call whose caller left does not run.
		if ctx.Err() == nil {
			ended = nil
		}
		return Outcome{Answer: <-w.answer, Waited: a.now().Sub(now)}, ended
	}
	return Outcome{TimedOut: timedOut, Waited: waited}, ended
}

// end takes w out of the pending calls for an end that is not a decision
// (timeout, caller gone, shutdown), after which Decide finds nothing. It
// reports false when a decision took w first.
func (a *Approvals) end(w *waiter) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.decided {
		return false
	}
	delete(a.pending, w.p.ID)
	return true
}

// Close ends every wait at once with ErrShuttingDown and makes later Asks
// fail with it: called when the process starts shutting down, so calls
// waiting for a person end with an answer instead of holding the shutdown
// up until their approval timeout. Decide finds nothing pending after it.
func (a *Approvals) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	close(a.closingLocked())
	a.pending = nil
}

func (a *Approvals) closingLocked() chan struct{} {
	if a.closing == nil {
		a.closing = make(chan struct{})
	}
	return a.closing
}

// List returns the pending calls, oldest first.
func (a *Approvals) List() []Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Pending, 0, len(a.pending))
	for _, w := range a.pending {
		out = append(out, w.p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// Decide answers the pending call id as an operator, whose decision came
// through the entry point via ("cli", "http").
func (a *Approvals) Decide(id string, approve bool, reason, via string) error {
	if !a.decide(id, Answer{Approve: approve, Reason: reason, By: "operator", Via: via}) {
		return NoSuchApprovalError(id)
	}
	return nil
}

func (a *Approvals) decide(id string, ans Answer) bool {
	a.mu.Lock()
	w, ok := a.pending[id]
	if ok {
		delete(a.pending, id) // the first decision wins
		w.decided = true
	}
	a.mu.Unlock()
	if !ok {
		return false
	}
	if a.OnDecide != nil {
		a.OnDecide(w.p, ans)
	}
	w.answer <- ans
	return true
}

func (a *Approvals) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
