package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
)

// errNotDelivered means the request could not be written to the worker,
// which therefore never started it: the call may go to another worker.
var errNotDelivered = errors.New("worker: request not delivered")

// roundTrip sends one request and waits for the reply, reading it on the
// calling goroutine (the poller wakes the caller itself when the reply
// arrives: no helper goroutine, no channel hand-off per call). Its
// watchdogs are timers that act on the worker, never on the reader: they
// kill the worker when no reply has come by kill (the call's deadline plus
// grace: the worker does not stop running wasm itself, see
// sandbox.InProcess.Supervised, nor a compiler that spins), when
// its memory passes the cap (checked every rssEvery), or when ctx is
// cancelled (the caller went away: nobody waits for the answer, and the
// call's worker and share must be free again) and the worker does not
// stop the request within cancelGrace of being asked to. Killing the
// worker ends the read at once (proc.kill), without waiting for the
// process to be gone, and deathError says why.
//
// ctx ending by its deadline is not acted on here: the worker answers
// timeout itself, or kill comes.
//
// start, when positive (a load), bounds the module's start function: once
// the worker reports that it runs (kindInstantiating, after compiling), it
// is killed (killStart) start plus grace later if that comes before kill.
func (p *Pool) roundTrip(ctx context.Context, w *proc, kind byte, header any, body []byte, kill time.Time, start time.Duration, maxReply int) (replyHeader, []byte, error) {
	if errors.Is(ctx.Err(), context.Canceled) {
		return replyHeader{}, nil, engine.Cancelled() // nothing sent: the worker stays as it is
	}
	events := newRelay(engine.EventsOf(ctx))
	wd := &watchdog{p: p, w: w, kind: kind, cancelDone: make(chan struct{}), writeDone: make(chan struct{})}
	var starting atomic.Bool // the deadline is the start function's
	deadline := time.AfterFunc(time.Until(kill), func() {
		p.notePeak(peakResidentBytes(w.cmd.Process.Pid))
		if starting.Load() {
			wd.kill(killStart)
			return
		}
		wd.kill(killDeadline)
	})
	instantiating := func() {
		if start <= 0 {
			return // not a load
		}
		if t := time.Now().Add(start + p.opts.Grace); t.Before(kill) && deadline.Stop() {
			starting.Store(true)
			deadline.Reset(time.Until(t))
		}
	}
	wd.mu.Lock()
	wd.rss = time.AfterFunc(rssEvery, wd.checkRSS)
	wd.mu.Unlock()
	stopCancel := context.AfterFunc(ctx, wd.cancelled(ctx))
	defer func() {
		deadline.Stop()
		wd.mu.Lock()
		wd.over = true
		wd.rss.Stop()
		wd.mu.Unlock()
		w.running.CompareAndSwap(wd, nil) // the pool's budget may stop it no more
		if !stopCancel() {
			// The cancel watchdog ran: wait until it has written its
			// frame, so that it cannot reach the worker's next request.
			<-wd.cancelDone
		}
		wd.mu.Lock()
		if wd.grace != nil {
			wd.grace.Stop()
		}
		wd.mu.Unlock()
		if kind == kindLoad {
			wd.restoreAfterLoad()
		}
	}()

	f, err := frame{}, writeFrame(w.stdin, kind, header, body)
	wd.written = err == nil
	close(wd.writeDone)
	if err != nil {
		err = fmt.Errorf("%w: %w", errNotDelivered, err)
	} else {
		f, err = events.readReply(w.stdout, maxReply, instantiating)
	}
	if err != nil {
		// The worker closed its end: it died, or was killed by a watchdog,
		// which also ended this wait (or wrote garbage, which readFrame
		// refuses before allocating).
		w.kill(killCrashed)
		if w.killReason() == killCrashed {
			// It died on its own: its exit status and stderr say why. A
			// worker the supervisor killed may still be dying; the reason
			// says all there is to say, and nobody waits for its end.
			<-w.dead
		}
		if errors.Is(err, errNotDelivered) && w.killReason() == killCrashed {
			return replyHeader{}, nil, err
		}
		return replyHeader{}, nil, p.deathError(w, err)
	}
	if f.kind != kindReply {
		w.kill(killProtocol)
		return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeInternal, "sandbox worker sent an unexpected frame")
	}
	h, err := parseReply(f.header)
	if err != nil {
		w.kill(killProtocol)
		return replyHeader{}, nil, toolerr.Errorf(toolerr.CodeInternal, "the sandbox worker broke the protocol (%v); it was stopped and will be replaced: try the call again, and report it if it happens again", err)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return replyHeader{}, nil, engine.Cancelled() // nobody waits for the answer
	}
	p.notePeak(h.PeakRSS)
	return h, f.body, nil
}

// rssEvery is how often a running request's worker memory is checked.
const rssEvery = 10 * time.Millisecond

// watchdog is the timers of one round trip.
type watchdog struct {
	p         *Pool
	w         *proc
	kind      byte          // the request's kind (kindLoad, kindCall, …)
	writeDone chan struct{} // closed once writing the request ended
	written   bool          // it was all written (set before writeDone closes)

	cancelDone chan struct{} // closed when the cancel watchdog is done
	mu         sync.Mutex
	rss        *time.Timer // the memory check (guarded by mu)
	over       bool        // the round trip has ended (guarded by mu)
	grace      *time.Timer // set by the cancel watchdog (guarded by mu)

	// cpuBase is the worker's CPU time at the first memory check of the
	// request, once cpuBaseSet (used only by the memory check's timer,
	// which runs one at a time).
	cpuBase    time.Duration
	cpuBaseSet bool
}

// kill kills the worker unless the round trip has ended (a timer that
// fires as the reply comes must not kill a worker that answered), then
// frees its memory (releaseMemory: the request's worker may hold up to
// its cap), and reports whether it killed it.
func (wd *watchdog) kill(reason killReason) bool {
	wd.mu.Lock()
	killed := !wd.over
	if killed {
		wd.w.kill(reason)
	}
	wd.mu.Unlock()
	if killed {
		wd.w.releaseMemory()
	}
	return killed
}

func (wd *watchdog) checkRSS() {
	wd.mu.Lock()
	over := wd.over
	wd.mu.Unlock()
	if over {
		return
	}
	rss, cpu, ok := usage(wd.w.cmd.Process.Pid)
	wd.p.notePeak(rss)
	if rss > wd.p.opts.MaxRSSBytes {
		wd.p.notePeak(peakResidentBytes(wd.w.cmd.Process.Pid))
		wd.kill(killMemory)
		return
	}
	wd.noteRSS(rss)
	if ok {
		wd.lowerIfLong(cpu)
	}
	wd.mu.Lock()
	if !wd.over {
		wd.rss.Reset(rssEvery)
	}
	wd.mu.Unlock()
}

// lowerIfLong lowers the worker's priority below the host's once its
// request has used longCall of CPU (a spinning call, a compile), so that it
// cannot take the cores the host needs to supervise it. CPU time, not time
// since the request was sent: on a loaded machine a 2 ms call can wait
// 100 ms for a core, and judged by the clock every such call lowered and
// retired its worker, whose replacement's module load waited as long and
// was lowered in turn: 400 concurrent calls of the Go time sample got 17
// answers and 383 busy or timeout (RATIONALE.md, "A worker is lowered for
// the CPU its request used, not for waiting"). The CPU is counted from the
// request's first memory check (rssEvery in), which short calls never
// reach; used is the worker's CPU time now. A worker lowered by a call is
// retired after it; one lowered by a load keeps the module it loaded
// (restoreAfterLoad).
func (wd *watchdog) lowerIfLong(used time.Duration) {
	w := wd.w
	if w.lowered.Load() {
		return
	}
	if !wd.cpuBaseSet {
		wd.cpuBase, wd.cpuBaseSet = used, true
		return
	}
	if used-wd.cpuBase < longCall {
		return
	}
	if wd.kind != kindLoad {
		w.retire.Store(true) // replaced after this request
	}
	w.lowered.Store(true)
	if err := setPriorityBelowHost(w.cmd.Process.Pid, workerNice); err != nil {
		wd.p.log.Warn("cannot lower a long-running sandbox worker's CPU priority", "err", err)
	}
}

// restoreAfterLoad gives a worker that a load lowered (a compile that
// used longCall of CPU) the host's priority back, where the host may raise
// it (root, or an RLIMIT_NICE that allows it): the load is over, and at a
// lower priority every later call would pay a woken worker's slower start
// (workerNice). Where it may not, the worker stays lowered and keeps its
// module: retiring it would make its replacement load the module again.
func (wd *watchdog) restoreAfterLoad() {
	w := wd.w
	if !w.lowered.Load() || w.retire.Load() || !w.alive() {
		return
	}
	if setPriorityBelowHost(w.cmd.Process.Pid, 0) == nil {
		w.lowered.Store(false)
	}
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux architecture's /proc ABI).
const clockTicks = 100

// usage is process pid's resident memory and user plus system CPU time,
// from one read of /proc/PID/stat (fields 24, 14 and 15, counted after
// the command's closing parenthesis, which may itself hold spaces); ok is
// false once the process is gone.
func usage(pid int) (rss int64, cpu time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 22 {
		return 0, 0, false
	}
	user, err1 := strconv.ParseInt(fields[11], 10, 64)
	sys, err2 := strconv.ParseInt(fields[12], 10, 64)
	pages, err3 := strconv.ParseInt(fields[21], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return pages * int64(os.Getpagesize()), time.Duration(user+sys) * time.Second / clockTicks, true
}

// cancelled is the watchdog run when ctx ends: if its caller went away,
// the worker is asked to stop the request (a cancel frame) and killed if
// it has not answered within cancelGrace.
func (wd *watchdog) cancelled(ctx context.Context) func() {
	return func() {
		defer close(wd.cancelDone)
		if !errors.Is(ctx.Err(), context.Canceled) {
			return // the deadline: the worker answers timeout, or kill comes
		}
		// A cancel frame cannot be put in the middle of the request: wait
		// for its write (microseconds, unless a large body meets a worker
		// that does not read), then ask; a write that does not end within
		// cancelGrace ends with the worker.
		t := time.NewTimer(cancelGrace)
		select {
		case <-wd.writeDone:
			t.Stop()
		case <-t.C:
			wd.kill(killCancelled)
			return
		}
		if !wd.written {
			return // the write failed: the caller handles the dead worker
		}
		if err := writeFrame(wd.w.stdin, kindCancel, struct{}{}, nil); err != nil {
			wd.w.kill(killCancelled)
			return
		}
		wd.mu.Lock()
		wd.grace = time.AfterFunc(cancelGrace, func() { wd.kill(killCancelled) })
		wd.mu.Unlock()
	}
}

// cancelGrace is how long a worker asked to stop a request (its caller went
// away) may take to answer before it is killed. The worker does not stop
// running wasm (sandbox.InProcess.Supervised); a call that ends within
// cancelGrace answers cancelled (TestServeCancelFrame) and keeps the
// worker — most calls take well under a millisecond, but a loaded machine
// can leave the process waiting for a core for tens of ms, and a kill
// costs a process start and the modules' reload. Longer calls are killed.
const cancelGrace = 50 * time.Millisecond

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
	case reason == killStart:
		return toolerr.Errorf(toolerr.CodeInvalidModule, "the module's start function did not finish within the tool's timeout; it was stopped")
	case reason == killPoolMemory:
		return p.budgetError(w)
	case reason == killMemory:
		return toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool used more than %d MiB of memory; it was stopped", p.opts.MaxRSSBytes>>20)
	case strings.Contains(tail, "out of memory"), strings.Contains(tail, "cannot allocate memory"):
		return toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool exhausted the memory of its sandbox; it was stopped")
	}
	first := strings.SplitN(strings.TrimSpace(head), "\n", 2)[0]
	if first == "" {
		select {
		case <-w.dead: // reaped: ProcessState is set and no longer written
			if st := w.cmd.ProcessState; st != nil {
				first = st.String() // e.g. "signal: killed"
			}
		default: // killed by the supervisor and not yet gone: not waited for
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
	rss, _, _ := usage(pid)
	return rss
}
