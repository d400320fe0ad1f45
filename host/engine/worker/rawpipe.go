package worker

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/internal/rawio"
)

// rawPipe reads and writes a non-blocking pipe with raw system calls,
// waiting for it in the runtime's poller when it is empty (or full).
//
// Why: a plain read or write enters the scheduler's system-call path,
// which wakes the runtime's monitor thread (sysmon) whenever the process
// was idle; sysmon then polls every 20 µs for the next millisecond. A
// worker goes idle between calls, so that was several timer wakeups and
// context switches per call — measured at ~20% of a worker's CPU time.
// A read or write of a non-blocking pipe never blocks, so it needs none
// of that.
//
// A read of an empty pipe may first poll it for a while (spin) instead of
// parking at once: see spinner.
type rawPipe struct {
	f    *os.File
	rc   syscall.RawConn
	spin spinner
}

// newRawPipe wraps f, which must be in non-blocking mode (os.Pipe's ends
// are; a descriptor inherited from a parent must be set so before
// os.NewFile).
func newRawPipe(f *os.File) (*rawPipe, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &rawPipe{f: f, rc: rc}, nil
}

func (p *rawPipe) Read(b []byte) (int, error) {
	var empty time.Time // when the pipe was first found empty
	polls, parked := false, false
	n, err := rawio.ReadPolling(p.rc, b, func() bool {
		if p.spin.budget > 0 && empty.IsZero() {
			empty = time.Now()
			polls = p.spin.polls()
		}
		if polls && !parked && p.spin.again(empty) {
			runtime.Gosched() // whatever else is runnable runs
			return true
		}
		parked = true
		return false
	})
	if !empty.IsZero() && (err == nil || err == io.EOF) {
		p.spin.waited(empty, parked)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		err = &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	}
	return n, err
}

func (p *rawPipe) Write(b []byte) (int, error) {
	n, err := rawio.Write(p.rc, b)
	if err != nil {
		err = &os.PathError{Op: "write", Path: p.f.Name(), Err: err}
	}
	return n, err
}

func (p *rawPipe) Close() error { return p.f.Close() }

// spinner decides whether a read of an empty pipe polls it for a while
// or parks at once.
//
// Why: parking costs the waiting side a sleep and the writing side a
// wake-up, and on this VM a wake-up of an idle vCPU is an inter-processor
// interrupt, a VM exit: perf put 20% of a worker's samples in the reply's
// pipe write alone, and a sequential isolated echo call took 110-123 µs
// p50 against 17-21 µs in process. When the other side answers within
// microseconds — a reply to a short call, the next request of a caller
// that calls back to back — polling for up to budget avoids both; when it
// does not, polling is wasted CPU. So a read polls only while the recent
// waits (a moving average, a quarter weight for the newest) stayed under
// twice the budget: a worker between a loaded server's calls, which come
// every few hundred microseconds, or an idle one, parks at once. A wait
// that parked is measured including its wake-up, which would keep a pair
// that turned fast again above the line; so one wait in probeEvery polls
// regardless, and a wait that ends while polling sets the average to
// itself. Polling yields the processor between tries (runtime.Gosched):
// other goroutines of the process run first.
//
// A caller that has been alone for a while (solo, when set) polls for up
// to longBudget instead: see longSpin.
type spinner struct {
	budget time.Duration
	// alone, when set, must also say yes for each poll: the caller's
	// knowledge of whether the other side is likely to answer at once.
	alone func() bool
	// solo, when set, says whether the calls have been sequential for a
	// while; then the budget is longBudget.
	solo       func() bool
	longBudget time.Duration
	recent     atomic.Int64 // ns
	waits      atomic.Uint32
}

// limit is the budget a poll that starts now has.
func (s *spinner) limit() time.Duration {
	if s.solo != nil && s.longBudget > s.budget && s.solo() {
		return s.longBudget
	}
	return s.budget
}

// probeEvery: one wait in this many polls whatever the recent waits were
// (at most budget/probeEvery of wasted polling per wait on average).
const probeEvery = 32

// polls reports whether a read that just found the pipe empty polls it.
func (s *spinner) polls() bool {
	return s.recent.Load() < int64(2*s.limit()) || s.waits.Add(1)%probeEvery == 0
}

// again reports whether a polling read that found the pipe empty at since
// polls once more. alone is asked at every try: a worker's reader starts
// waiting for the next request before the call that says whether to poll
// has been read.
func (s *spinner) again(since time.Time) bool {
	return (s.alone == nil || s.alone()) && time.Since(since) < s.limit()
}

// waited records a read's wait for data, which began at since; parked
// says whether it ended in the poller rather than while polling.
func (s *spinner) waited(since time.Time, parked bool) {
	w := int64(time.Since(since))
	if !parked {
		s.recent.Store(w)
		return
	}
	s.recent.Store((3*s.recent.Load() + w) / 4)
}
