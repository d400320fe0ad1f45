package govern

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitPending returns the first pending approval once there is one.
func waitPending(t *testing.T, a *Approvals) Pending {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ps := a.List(); len(ps) > 0 {
			return ps[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no pending approval appeared")
	return Pending{}
}

func TestApprovalsDecide(t *testing.T) {
	var decided []Answer
	a := &Approvals{Timeout: time.Minute, OnDecide: func(_ Pending, ans Answer) { decided = append(decided, ans) }}
	for _, approve := range []bool{true, false} {
		done := make(chan Outcome)
		go func() {
			out, err := a.Ask(context.Background(), Pending{Tool: "delete_note", Arguments: []byte(`{"id":"1"}`)})
			if err != nil {
				t.Error(err)
			}
			done <- out
		}()
		p := waitPending(t, a)
		if p.Tool != "delete_note" || string(p.Arguments) != `{"id":"1"}` || p.ID == "" {
			t.Fatalf("pending = %+v", p)
		}
		if err := a.Decide(p.ID, approve, "because", "cli"); err != nil {
			t.Fatal(err)
		}
		out := <-done
		if out.Approve != approve || out.By != "operator" || out.Reason != "because" || out.TimedOut {
			t.Fatalf("outcome = %+v", out)
		}
		if err := a.Decide(p.ID, true, "", "cli"); !errors.Is(err, ErrNoSuchApproval) {
			t.Fatalf("second decision: %v", err)
		}
		if len(a.List()) != 0 {
			t.Fatal("decided call still pending")
		}
	}
	if len(decided) != 2 {
		t.Fatalf("OnDecide saw %d decisions", len(decided))
	}
}

func TestApprovalsTimeoutAndCallerGone(t *testing.T) {
	a := &Approvals{Timeout: 100 * time.Millisecond}
	out, err := a.Ask(context.Background(), Pending{Tool: "t"})
	if err != nil || !out.TimedOut || out.Approve || out.Waited < 100*time.Millisecond {
		t.Fatalf("timeout: %+v %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.Timeout = time.Minute
	go func() { waitPending(t, a); cancel() }()
	if _, err := a.Ask(ctx, Pending{Tool: "t"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("caller gone: %v", err)
	}
	if len(a.List()) != 0 {
		t.Fatal("abandoned call still pending")
	}
}

func TestApprovalsElicitation(t *testing.T) {
	a := &Approvals{Timeout: time.Minute}
	accept := func(ctx context.Context, p Pending) (Answer, error) {
		return Answer{Approve: true, Reason: "user said yes"}, nil
	}
	out, err := a.Ask(WithElicitor(context.Background(), accept), Pending{Tool: "t"})
	if err != nil || !out.Approve || out.By != "mcp-client" {
		t.Fatalf("elicitation accept: %+v %v", out, err)
	}
	// A client that cannot be asked leaves the decision to an operator.
	unsupported := func(ctx context.Context, p Pending) (Answer, error) {
		return Answer{}, errors.New("client does not support elicitation")
	}
	done := make(chan Outcome)
	go func() {
		out, _ := a.Ask(WithElicitor(context.Background(), unsupported), Pending{Tool: "t"})
		done <- out
	}()
	p := waitPending(t, a)
	if err := a.Decide(p.ID, false, "no", "cli"); err != nil {
		t.Fatal(err)
	}
	if out := <-done; out.Approve || out.By != "operator" {
		t.Fatalf("after unsupported elicitation: %+v", out)
	}
}

// Calls waiting for a person hold no admission slot, so their number is
// bounded on its own: the one over MaxPending is refused at once, and a
// place frees when a waiting call ends.
func TestApprovalsPendingBounded(t *testing.T) {
	a := &Approvals{Timeout: time.Minute, MaxPending: 3}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 3)
	for range 3 {
		go func() { _, err := a.Ask(ctx, Pending{Tool: "t"}); ended <- err }()
	}
	for len(a.List()) < 3 {
		time.Sleep(time.Millisecond)
	}
	if _, err := a.Ask(context.Background(), Pending{Tool: "t"}); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("a fourth waiting call: %v, want ErrTooManyPending", err)
	}
	if len(a.List()) != 3 {
		t.Fatalf("%d pending after a refused Ask, want 3", len(a.List()))
	}
	if err := a.Decide(a.List()[0].ID, true, "", "cli"); err != nil {
		t.Fatal(err)
	}
	<-ended
	go func() { _, err := a.Ask(ctx, Pending{Tool: "t"}); ended <- err }()
	for len(a.List()) < 3 {
		time.Sleep(time.Millisecond)
	}
}

// Close ends every call waiting for a person at once (whatever its
// timeout, with or without an elicitor still asking), refuses later asks,
// and leaves nothing pending to decide.
func TestApprovalsCloseEndsEveryWait(t *testing.T) {
	a := &Approvals{Timeout: time.Hour}
	never := func(ctx context.Context, _ Pending) (Answer, error) { <-ctx.Done(); return Answer{}, ctx.Err() }
	ctxs := []context.Context{context.Background(), WithElicitor(context.Background(), never)}
	errs := make(chan error, len(ctxs))
	for _, ctx := range ctxs {
		go func() {
			out, err := a.Ask(ctx, Pending{Tool: "delete_note"})
			if out.Approve || out.TimedOut {
				t.Errorf("outcome after Close: %+v", out)
			}
			errs <- err
		}()
	}
	for len(a.List()) < len(ctxs) {
		waitPending(t, a)
	}
	id := a.List()[0].ID
	a.Close()
	for range ctxs {
		if err := <-errs; !errors.Is(err, ErrShuttingDown) {
			t.Fatalf("waiting call after Close: %v, want ErrShuttingDown", err)
		}
	}
	if _, err := a.Ask(context.Background(), Pending{Tool: "t"}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("Ask after Close: %v, want ErrShuttingDown at once", err)
	}
	if err := a.Decide(id, true, "", "cli"); !errors.Is(err, ErrNoSuchApproval) {
		t.Fatalf("Decide after Close: %v", err)
	}
	if ps := a.List(); len(ps) != 0 {
		t.Fatalf("pending after Close: %+v", ps)
	}
	a.Close() // twice is harmless
}

// A call whose wait ended (timeout, caller gone, shutdown) can no longer
// be decided: a decision arriving as the wait ends either is refused
// (ErrNoSuchApproval, nothing audited) or is the call's outcome. It used
// to be accepted and audited as approved while the call went on as
// timed out or cancelled, and the operator was told "approved".
func TestDecisionAsTheWaitEndsIsNotLost(t *testing.T) {
	for _, end := range []string{"timeout", "caller gone"} {
		t.Run(end, func(t *testing.T) {
			var audited []Answer
			a := &Approvals{Timeout: time.Minute, OnDecide: func(_ Pending, ans Answer) { audited = append(audited, ans) }}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch end {
			case "timeout":
				a.Timeout = time.Nanosecond
			case "caller gone":
				cancel()
			}
			// Now is read once as the wait starts and once as it ends; an
			// operator's decision lands exactly in between the end and
			// the call's return.
			var reads int
			var decideErr error
			decided := false
			a.Now = func() time.Time {
				reads++
				if reads == 2 {
					if ps := a.List(); len(ps) > 0 {
						decided, decideErr = true, a.Decide(ps[0].ID, true, "", "cli")
					}
				}
				return time.Unix(0, 0)
			}
			out, err := a.Ask(ctx, Pending{Tool: "delete_note"})
			if decided && decideErr == nil {
				// The decision is the outcome; a caller who left still
				// gets no run.
				if (end == "caller gone") != (err != nil) || !out.Approve || out.TimedOut {
					t.Fatalf("the operator was told approved (audited %+v), yet the call ended %+v, %v", audited, out, err)
				}
				return
			}
			if len(audited) != 0 {
				t.Fatalf("a refused decision was audited: %+v", audited)
			}
			if err == nil && !out.TimedOut {
				t.Fatalf("outcome %+v with no decision", out)
			}
		})
	}
}

// A decision being recorded (OnDecide) when shutdown begins is the call's
// outcome: the operator was told it counted and the audit log has it. The
// wait used to look for it once, without waiting, and end the call as
// "shutting down" when the decision had not been handed over yet.
func TestDecisionInFlightAtShutdownCounts(t *testing.T) {
	var a *Approvals
	ended := make(chan struct{}) // the wait saw the shutdown
	reads := 0
	a = &Approvals{Timeout: time.Minute,
		Now: func() time.Time {
			if reads++; reads == 2 {
				close(ended)
			}
			return time.Unix(0, 0)
		},
		// The decision is being audited when shutdown begins, and is
		// handed over only once the wait has seen it.
		OnDecide: func(Pending, Answer) { a.Close(); <-ended }}
	done := make(chan error, 1)
	var out Outcome
	go func() {
		var err error
		out, err = a.Ask(context.Background(), Pending{Tool: "delete_note"})
		done <- err
	}()
	p := waitPending(t, a)
	if err := a.Decide(p.ID, true, "", "cli"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !out.Approve {
		t.Fatalf("an audited approval in flight at shutdown ended the call as %+v, %v", out, err)
	}
}
