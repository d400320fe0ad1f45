package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
)

// errNotDelivered means the request could not be written to the worker,
// which therefore never started it: the call may go to another worker.
var errNotDelivered = errors.New("worker: request not delivered")

// result is what a round trip's reader got: the reply frame or an error.
type result struct {
	f   frame
	err error
}

// roundTrip sends one request and waits for the reply. It is the watchdog of
// that round trip: it kills the worker when no reply has come by kill (the
// call's deadline plus grace: the worker stops the call itself at the
// deadline, so this catches what it cannot stop, like loop-free code or a
// spinning compiler), when its memory passes the cap, or when ctx is
// cancelled (the caller went away: nobody waits for the answer, and the
// call's worker and share must be free again) and the worker does not stop
// the request within cancelGrace of being asked to.
//
// ctx ending by its deadline is not acted on here: the worker answers
// timeout itself, or kill comes.
func (p *Pool) roundTrip(ctx context.Context, w *proc, kind byte, header any, body []byte, kill time.Time, maxReply int) (replyHeader, []byte, error) {
	done := make(chan result, 1)
	written := make(chan struct{}) // closed once the request is written
	events := newRelay(engine.EventsOf(ctx))
	go func() {
		if err := writeFrame(w.stdin, kind, header, body); err != nil {
			done <- result{err: fmt.Errorf("%w: %w", errNotDelivered, err)}
			return
		}
		close(written)
		f, err := events.readReply(w.stdout, maxReply)
		done <- result{f, err}
	}()
	timer := time.NewTimer(time.Until(kill))
	defer timer.Stop()
	cancelled := ctx.Done()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				// The worker closed its end: it died (or wrote garbage,
				// which readFrame refuses before allocating).
				w.kill(killCrashed)
				<-w.dead
				if errors.Is(r.err, errNotDelivered) && w.killReason() == killCrashed {
					return replyHeader{}, nil, r.err
				}
				return replyHeader{}, nil, p.deathError(w, r.err)
			}
			if r.f.kind != kindReply {
				w.kill(killProtocol)
				return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeInternal, "sandbox worker sent an unexpected frame")
			}
			var h replyHeader
			if err := json.Unmarshal(r.f.header, &h); err != nil {
				w.kill(killProtocol)
				return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeInternal, "sandbox worker sent a malformed reply")
			}
			p.notePeak(h.PeakRSS)
			return h, r.f.body, nil
		case <-timer.C:
			p.notePeak(peakResidentBytes(w.cmd.Process.Pid))
			w.kill(killDeadline)
			<-done
			return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeTimeout, "the tool did not finish within its deadline; it was stopped")
		case <-cancelled:
			if !errors.Is(ctx.Err(), context.Canceled) {
				cancelled = nil // the deadline: wait for the reply or kill
				continue
			}
			p.stopCancelled(w, written, done)
			return replyHeader{}, nil, engine.Cancelled()
		case <-tick.C:
			rss := residentBytes(w.cmd.Process.Pid)
			p.notePeak(rss)
			if rss > p.opts.MaxRSSBytes {
				p.notePeak(peakResidentBytes(w.cmd.Process.Pid))
				w.kill(killMemory)
				<-done
				return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool used more than %d MiB of memory; it was stopped", p.opts.MaxRSSBytes>>20)
			}
		}
	}
}

// cancelGrace is how long a worker asked to stop a request (its caller went
// away) may take to answer before it is killed. wazero stops at the next
// loop back-edge: the worker answers in ~0.1 ms on an idle machine
// (TestServeCancelFrame), but a loaded one can leave the process waiting
// for a core for tens of ms, and a kill costs a process start and the
// modules' reload. Loop-free code never stops and is killed.
const cancelGrace = 50 * time.Millisecond

// stopCancelled ends a round trip whose caller went away: it sends the
// worker a cancel frame and keeps the worker if it answers (anything)
// within cancelGrace, else it kills it. It returns once the round trip's
// reader is done, so the worker is free for its owner to release.
func (p *Pool) stopCancelled(w *proc, written <-chan struct{}, done <-chan result) {
	select {
	case <-written:
	default:
		// The request is still being written (a large body): a cancel
		// frame cannot be put in the middle of it.
		w.kill(killCancelled)
		<-done
		return
	}
	if err := writeFrame(w.stdin, kindCancel, struct{}{}, nil); err != nil {
		w.kill(killCancelled)
		<-done
		return
	}
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil || r.f.kind != kindReply {
			w.kill(killCancelled)
		}
	case <-t.C:
		w.kill(killCancelled)
		<-done
	}
}

// deathError explains why a worker died mid-request.
func (p *Pool) deathError(w *proc, err error) error {
	reason := w.killReason()
	if p.ctx.Err() != nil {
		return toolerr.Errorf(toolerr.CodeUnavailable, "the host is shutting down")
	}
	head := w.stderr.Head()
	tail := head + "\n" + w.stderr.String()
	switch {
	case reason == killCancelled:
		return engine.Cancelled()
	case reason == killDeadline:
		return toolerr.Errorf(toolerr.CodeTimeout, "the tool did not finish within its deadline; it was stopped")
	case reason == killMemory, strings.Contains(tail, "out of memory"), strings.Contains(tail, "cannot allocate memory"):
		return toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool exhausted the memory of its sandbox; it was stopped")
	}
	first := strings.SplitN(strings.TrimSpace(head), "\n", 2)[0]
	if first == "" {
		if st := w.cmd.ProcessState; st != nil {
			first = st.String() // e.g. "signal: killed"
		}
	}
	p.log.Warn("sandbox worker died", "err", err, "stderr", first)
	return toolerr.Errorf(toolerr.CodePluginError, "the sandbox running the tool crashed (%s)", firstWords(first))
}

// peakResidentBytes is the process's peak resident memory (VmHWM), 0 if
// it cannot be read.
func peakResidentBytes(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	return parseStatusKB(data, "VmHWM:")
}

// parseStatusKB reads a "Name:   123 kB" line of /proc/PID/status.
func parseStatusKB(status []byte, name string) int64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func residentBytes(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
