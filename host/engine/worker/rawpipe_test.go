package worker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine/enginetest"
	"github.com/toolhost/toolhost/plugin"
)

// rawPipeReader makes a pipe: its read end as a rawPipe, its write end.
func rawPipeReader(t *testing.T) (*rawPipe, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := newRawPipe(r)
	if err != nil {
		t.Fatal(err)
	}
	return pr, w
}

// TestRawPipeCarriesMoreThanThePipeHolds writes 1 MiB (16 times a pipe's
// buffer) through a rawPipe while the other end reads it, so both sides
// wait in the poller; then the writer's close reads as EOF, and a closed
// rawPipe refuses to read.
func TestRawPipeCarriesMoreThanThePipeHolds(t *testing.T) {
	pr, w := rawPipeReader(t)
	pw, err := newRawPipe(w)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	wrote := make(chan error, 1)
	go func() {
		n, err := pw.Write(want)
		if err == nil && n != len(want) {
			err = errors.New("short write without an error")
		}
		if cerr := pw.Close(); err == nil {
			err = cerr
		}
		wrote <- err
	}()
	got, err := io.ReadAll(pr)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written (or different ones)", len(got), len(want))
	}
	if n, err := pr.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after the writer closed = %d, %v; want 0, EOF", n, err)
	}
	pr.Close()
	if _, err := pr.Read(make([]byte, 8)); err == nil || err == io.EOF {
		t.Fatalf("read of a closed pipe = %v; want a closed-file error", err)
	}
}

// TestRawPipeWriteToClosedReaderFails: a worker that died makes the
// supervisor's next write fail (EPIPE), not hang.
func TestRawPipeWriteToClosedReaderFails(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pw, err := newRawPipe(w)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	r.Close()
	if _, err := pw.Write([]byte("frame")); err == nil {
		t.Fatal("write to a pipe nobody reads succeeded")
	}
}

// TestSpinnerAdapts: a spinner polls while recent waits were short, stops
// once they grow long (a worker between a loaded server's calls, an idle
// one), still probes one wait in probeEvery, comes back at once when a
// wait ends while polling, and never polls past its budget.
func TestSpinnerAdapts(t *testing.T) {
	s := spinner{budget: 50 * time.Microsecond}
	if !s.polls() || !s.again(time.Now()) {
		t.Fatal("a new spinner does not poll")
	}
	if s.again(time.Now().Add(-time.Millisecond)) {
		t.Fatal("polls past its budget")
	}
	for range 3 {
		s.waited(time.Now().Add(-2*time.Millisecond), true)
	}
	polled := 0
	for range 10 * probeEvery {
		if s.polls() {
			polled++
		}
	}
	if polled != 10 {
		t.Fatalf("after three parked waits of 2 ms (recent %v), %d of %d waits poll; want one in %d", time.Duration(s.recent.Load()), polled, 10*probeEvery, probeEvery)
	}
	s.waited(time.Now().Add(-10*time.Microsecond), false)
	if !s.polls() {
		t.Fatalf("a wait that ended while polling does not bring polling back (recent %v)", time.Duration(s.recent.Load()))
	}
	for range 12 {
		s.waited(time.Now().Add(-90*time.Microsecond), true)
	}
	if !s.polls() {
		t.Fatalf("parked waits of 90 µs (under twice the budget) stop polling (recent %v)", time.Duration(s.recent.Load()))
	}
	alone := false
	s.alone = func() bool { return alone }
	if s.again(time.Now()) {
		t.Fatal("polls while not alone")
	}
	alone = true
	if !s.again(time.Now()) {
		t.Fatal("does not poll once alone again")
	}
	solo := false
	s.solo, s.longBudget = func() bool { return solo }, 250*time.Microsecond
	if s.again(time.Now().Add(-100 * time.Microsecond)) {
		t.Fatal("polls past its budget before the calls were sequential for a while")
	}
	solo = true
	if !s.again(time.Now().Add(-100 * time.Microsecond)) {
		t.Fatal("a solo caller's poll stops before its long budget")
	}
	if s.again(time.Now().Add(-300 * time.Microsecond)) {
		t.Fatal("a solo caller polls past its long budget")
	}
	alone = false
	if s.again(time.Now()) {
		t.Fatal("a solo caller polls while not alone")
	}
	for range 12 {
		s.waited(time.Now().Add(-400*time.Microsecond), true)
	}
	if !s.polls() {
		t.Fatalf("a solo caller's parked waits of 400 µs (under twice its long budget) stop polling (recent %v)", time.Duration(s.recent.Load()))
	}
	solo = false
	// Twice: a single poll may be the probe it still makes now and then.
	if first, second := s.polls(), s.polls(); first && second {
		t.Fatalf("parked waits of 400 µs keep polling once the caller is not solo (recent %v)", time.Duration(s.recent.Load()))
	}
}

// TestPoolSolo: calls one right after another make the pool solo (the
// long polling budget) after soloCalls of them, never fewer; a call that
// overlaps another ends it, and so does a pause longer than longSpin.
func TestPoolSolo(t *testing.T) {
	p := newTestPool(t, Options{Workers: 2})
	m := compile(t, p, enginetest.Spec("solo_echo", plugin.Limits{}))
	call := func() {
		if out, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil || string(out) != "{}" {
			t.Fatalf("echo: %q, %v", out, err)
		}
	}
	// sequence calls until the pool is solo. Any pause of this machine's
	// longer than longSpin between two calls starts the count again, so
	// it may take more than soloCalls calls, never fewer.
	sequence := func(what string) {
		t.Helper()
		for i := 0; !p.solo(); i++ {
			if i == 1000 {
				t.Fatalf("%s: not solo after 1000 sequential calls", what)
			}
			call()
			if p.solo() && i+1 < soloCalls {
				t.Fatalf("%s: solo after %d calls, want %d", what, i+1, soloCalls)
			}
		}
	}
	call() // the pause before the first call is unknown
	sequence("from the start")
	time.Sleep(2 * longSpin)
	call()
	if p.solo() {
		t.Fatalf("solo right after a pause of %v", 2*longSpin)
	}
	sequence("after a pause")
	// Two calls at once: the second comes in while the first is inside.
	var wg sync.WaitGroup
	for tries := 0; p.solo(); tries++ {
		if tries == 1000 {
			t.Fatal("1000 pairs of calls started together never overlapped")
		}
		start := make(chan struct{})
		for range 2 {
			wg.Go(func() { <-start; call() })
		}
		close(start)
		wg.Wait()
	}
	call()
	if p.solo() {
		t.Fatal("solo right after calls overlapped")
	}
}

// TestRawPipeSpinningReadsEverything: with polling on, frames written
// after pauses short and long (polled for, parked for) all arrive, in
// order, and the writer's close still reads as EOF.
func TestRawPipeSpinningReadsEverything(t *testing.T) {
	pr, w := rawPipeReader(t)
	pr.spin.budget = 50 * time.Microsecond
	defer pr.Close()
	pauses := []time.Duration{0, 5 * time.Microsecond, 20 * time.Microsecond, 200 * time.Microsecond, 2 * time.Millisecond}
	var want []byte
	go func() {
		for i := range 200 {
			time.Sleep(pauses[i%len(pauses)])
			frame := bytes.Repeat([]byte{byte(i)}, 1+i%37)
			if _, err := w.Write(frame); err != nil {
				t.Error(err)
				break
			}
		}
		w.Close()
	}()
	for i := range 200 {
		want = append(want, bytes.Repeat([]byte{byte(i)}, 1+i%37)...)
	}
	got, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}
}
