package host

import (
	"context"
	"errors"
	"testing"
	"time"
)

// admitted waits for one grant from ch.
func admitted(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no call was admitted within 10s")
		return ""
	}
}

// Free slots go to the waiting plugins in turn, whatever the order and
// number of their waiting calls.
func TestAdmissionIsFairAcrossPlugins(t *testing.T) {
	// Every plugin has a call running and every slot is taken, so each
	// further call queues (a plugin with nothing running would be
	// admitted at once).
	a := newAdmission(4, 10, 100)
	var hold func()
	for _, p := range []string{"flood", "flood", "b", "c"} {
		r, err := a.admit(context.Background(), p, false)
		if err != nil {
			t.Fatal(err)
		}
		if p == "flood" {
			hold = r
		}
	}
	grants := make(chan string, 20)
	enqueue := func(p string) {
		queued := a.load().Queued
		go func() {
			release, err := a.admit(context.Background(), p, false)
			if err != nil {
				t.Error(err)
				return
			}
			grants <- p
			release()
		}()
		for a.load().Queued == queued { // keep the arrival order deterministic
			time.Sleep(time.Millisecond)
		}
	}
	// A flood of one plugin's calls arrives first, then one call each of
	// two others.
	for range 6 {
		enqueue("flood")
	}
	enqueue("b")
	enqueue("c")
	// Each grant releases at once, so grants happen one at a time in
	// dispatch order.
	hold()
	var order []string
	for range 8 {
		order = append(order, admitted(t, grants))
	}
	// b and c are served within the first three grants, not after the flood.
	pos := map[string]int{}
	for i, p := range order {
		if _, ok := pos[p]; !ok {
			pos[p] = i
		}
	}
	if pos["b"] > 2 || pos["c"] > 2 {
		t.Fatalf("admission order %v: b and c waited behind the flood", order)
	}
}

// Plugins that hold every slot do not hold off a plugin with nothing
// running: its call is admitted at once (its second one waits).
func TestAdmissionReservesForIdlePlugins(t *testing.T) {
	a := newAdmission(2, 2, 10)
	for range 2 {
		if _, err := a.admit(context.Background(), "spin", false); err != nil {
			t.Fatal(err)
		}
	}
	release, err := a.admit(context.Background(), "benign", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.admit(ctx, "benign", false); !errors.Is(err, errGaveUp) {
		t.Fatalf("a second call beyond the bound: %v, want to wait", err)
	}
	release()
	if l := a.load(); l.Running != 2 {
		t.Fatalf("load %+v", l)
	}
}

func TestAdmissionBounds(t *testing.T) {
	a := newAdmission(2, 1, 2)
	r1, err := a.admit(context.Background(), "p", false)
	if err != nil {
		t.Fatal(err)
	}
	// p is at its share: the next p call waits, even with a free slot.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.admit(ctx, "p", false); !errors.Is(err, errGaveUp) {
		t.Fatalf("over the plugin share: %v, want to wait and give up", err)
	}
	if l := a.load(); l.Queued != 0 || l.Running != 1 {
		t.Fatalf("after giving up: %+v", l)
	}
	// Another plugin takes the free slot at once.
	r2, err := a.admit(context.Background(), "q", false)
	if err != nil {
		t.Fatal(err)
	}
	// The queue holds at most 3/4 of 2 = 1 call of one plugin, 2 overall.
	waiting := make(chan error, 2)
	go func() { _, err := a.admit(context.Background(), "p", false); waiting <- err }()
	for a.load().Queued != 1 {
		time.Sleep(time.Millisecond)
	}
	if _, err := a.admit(context.Background(), "p", false); !errors.Is(err, errPluginQueueFull) {
		t.Fatalf("p's queue full: %v", err)
	}
	r1()
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	r2()
	if l := a.load(); l.Running != 1 {
		t.Fatalf("load %+v, want the waiting call running", l)
	}
}

// A call put back at the front (after a person decided on it) goes
// before calls that arrived while it was away.
func TestAdmissionFront(t *testing.T) {
	a := newAdmission(1, 1, 10)
	hold, _ := a.admit(context.Background(), "p", false)
	grants := make(chan string, 2)
	go func() {
		r, _ := a.admit(context.Background(), "p", false)
		grants <- "late"
		r()
	}()
	for a.load().Queued != 1 {
		time.Sleep(time.Millisecond)
	}
	go func() {
		r, _ := a.admit(context.Background(), "p", true)
		grants <- "front"
		r()
	}()
	for a.load().Queued != 2 {
		time.Sleep(time.Millisecond)
	}
	hold()
	if first := admitted(t, grants); first != "front" {
		t.Fatalf("first grant %s, want front", first)
	}
	admitted(t, grants)
	if err := a.waitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
}
