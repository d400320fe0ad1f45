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
