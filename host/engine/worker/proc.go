package worker

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// killReason is why the supervisor ended a worker process. It is a kind,
// set once (the first reason wins), read when explaining a death.
type killReason uint32

const (
	notKilled killReason = iota
	// killCrashed marks a worker that died on its own mid-request: kill
	// then only makes sure it is gone.
	killCrashed
	killNoStart     // it did not report ready (in time)
	killDeadline    // the request ran past its deadline plus grace
	killStart       // a load's start function ran past the tool's timeout plus grace
	killMemory      // its resident memory passed the cap
	killPoolMemory  // the pool's workers passed their memory budget, and it was the largest
	killCancelled   // the caller went away and it did not stop at once
	killProtocol    // it sent a frame the protocol does not allow
	killReplaced    // it was found dead or unusable; a new one replaces it
	killRetired     // a surplus worker the pool no longer needs
	killPoolClosing // the pool is closing
)

func (r killReason) String() string {
	switch r {
	case notKilled:
		return "not killed"
	case killCrashed:
		return "crashed"
	case killNoStart:
		return "did not start"
	case killDeadline:
		return "deadline"
	case killStart:
		return "start function"
	case killMemory:
		return "memory"
	case killPoolMemory:
		return "pool memory"
	case killCancelled:
		return "cancelled"
	case killProtocol:
		return "protocol error"
	case killReplaced:
		return "replaced"
	case killRetired:
		return "retired"
	case killPoolClosing:
		return "pool closed"
	}
	return fmt.Sprintf("killReason(%d)", uint32(r))
}

// proc is one worker process.
//
// Ownership: a proc that is not in the idle set belongs to exactly one
// goroutine (the one starting it, or the call that acquired it); only that
// goroutine writes to stdin, reads stdout and touches loaded. Any goroutine
// may kill it or ask whether it is alive (atomics and the dead channel);
// the goroutine waiting on the process closes dead.
type proc struct {
	id     uint64
	pool   *Pool
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tailBuffer
	// in and out are stdin and stdout's pipes, which kill ends every wait
	// on (their deadlines are safe to set from any goroutine).
	in, out *rawPipe
	// loaded is the set of module keys loaded in the process (owner only).
	loaded map[string]bool
	dead   chan struct{} // closed when the process has exited
	reason atomic.Uint32 // a killReason, set once
	// dropped is set once the pool has stopped counting it (Pool.drop).
	dropped atomic.Bool
	// lowered is set once its priority was lowered for a request that used
	// longCall of CPU (watchdog.lowerIfLong); retire, when that request
	// was a call: such a worker is replaced after it.
	lowered, retire atomic.Bool
	// idleSince is when it last became idle (guarded by sched.mu).
	idleSince time.Time
	// rss is its resident memory as last read (at start, by its request's
	// memory check, or by the pool's budget check); running is the
	// watchdog of its request once that request's first memory check ran
	// (nil between requests): only such a worker may be stopped for the
	// pool's budget. overBudget says by how much, once it was.
	rss        atomic.Int64
	running    atomic.Pointer[watchdog]
	overBudget atomic.Pointer[budgetExcess]
	// pidfd refers to the process until it is reaped, then is -1
	// (memfree.go); pidfdMu guards it.
	pidfdMu sync.Mutex
	pidfd   int
}

// startTimeout bounds how long a new worker may take to report ready.
const startTimeout = 30 * time.Second

// start starts one worker process and waits until it reports ready.
func (p *Pool) start() (*proc, error) {
	cmd := exec.Command(p.opts.Command[0], p.opts.Command[1:]...)
	cmd.Env = []string{"GOMAXPROCS=1", "GODEBUG=madvdontneed=1", "PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, stdout, closeChildEnds, err := pipes(cmd)
	if err != nil {
		return nil, err
	}
	stdout.spin.budget = replySpin
	stdout.spin.alone = func() bool { return p.calls.Load() <= 1 }
	stdout.spin.solo, stdout.spin.longBudget = p.solo, longSpin
	w := &proc{id: p.gen.Add(1), pool: p, cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: &tailBuffer{max: 4096}, in: stdin, out: stdout, loaded: map[string]bool{}, dead: make(chan struct{}), pidfd: -1}
	cmd.Stderr = w.stderr
	err = cmd.Start()
	closeChildEnds()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("worker: start %s: %w", p.opts.Command[0], err)
	}
	lim := unix.Rlimit{Cur: p.opts.AddressSpaceBytes, Max: p.opts.AddressSpaceBytes}
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_AS, &lim, nil); err != nil {
		p.log.Warn("cannot limit worker address space", "err", err)
	}
	core := unix.Rlimit{}
	_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_CORE, &core, nil)
	p.started.Add(1)
	w.openPidfd()
	p.procsMu.Lock()
	p.procs[w] = struct{}{}
	p.procsMu.Unlock()
	go p.wait(w)
	// A worker that does not come up in time is killed, which ends the
	// read below.
	slow := time.AfterFunc(startTimeout, func() { w.kill(killNoStart) })
	f, err := readFrame(w.stdout, 0)
	slow.Stop()
	if err != nil || f.kind != kindReady {
		w.kill(killNoStart)
		return nil, fmt.Errorf("worker: the sandbox worker did not start: %v %s", err, strings.TrimSpace(w.stderr.String()))
	}
	w.rss.Store(residentBytes(cmd.Process.Pid)) // its share of the pool's memory budget
	return w, nil
}

// workerNice is how many nice levels below the host a worker runs once a
// request in it has used longCall of CPU: the host supervises it (kills a call
// at its deadline, stops a cancelled one, writes the audit record and
// answers the client), and at equal priority a plugin spinning in several
// workers took the cores from the host as much as from anyone: on 2 loaded
// cores with two plugins spinning in six workers, a spinning call ended up
// to 860 ms past its deadline and a benign call took up to 860 ms, most of
// it the host waiting for a core. Five levels give the host about three
// times a worker's share of a contended core (RATIONALE.md, "Workers run
// below the host's priority").
const workerNice = 5

// longCall is how much CPU a request uses at the host's priority. Short calls
// stay there: a worker always below the host cost an 8-client HTTP run 5%
// of its calls/s and doubled the sequential rows' p99 (a woken worker
// preempted less). An unprivileged host cannot raise a worker's priority
// back, so a worker a call lowered is replaced after it; one a load
// lowered keeps its module and gets its priority back where the host may
// raise it (watchdog.restoreAfterLoad).
const longCall = 100 * time.Millisecond

// setPriorityBelowHost sets every thread of the worker whose process
// group is pgid (it leads its own) levels nice levels below the calling
// thread's priority (at most nice 19); threads it starts later inherit it.
// Raising it back (levels 0 after workerNice) fails with EACCES where the
// host may not raise a priority (not root, no RLIMIT_NICE that allows it).
func setPriorityBelowHost(pgid, levels int) error {
	// The raw getpriority answers 20 - nice, 1 (nice 19) to 40 (-20).
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		return err
	}
	return unix.Setpriority(unix.PRIO_PGRP, pgid, min(20-prio+levels, 19))
}

// wait reaps w, counts a crash, and drops it from the pool (which starts a
// replacement) at once, whether it was idle or busy.
func (p *Pool) wait(w *proc) {
	_ = w.cmd.Wait()
	w.closePidfd()
	p.procsMu.Lock()
	delete(p.procs, w)
	p.procsMu.Unlock()
	reason := w.killReason()
	crashed := reason == notKilled || reason == killCrashed
	if crashed {
		p.crashed.Add(1)
	}
	close(w.dead)
	p.drop(w)
}

func (w *proc) killReason() killReason { return killReason(w.reason.Load()) }

// kill ends the process (and its process group) for reason; the first
// reason given is the one kept. It also ends, at once, any wait to read
// the worker's reply or write its request: a killed worker's pipes close
// only when the kernel has torn the process down, which on a loaded
// machine took up to 450 ms (the dying process waits for a core like any
// other), and a call ends at its deadline or cancellation, not at the
// end of its worker's teardown (RATIONALE.md, "A killed worker's call
// ends at the kill").
func (w *proc) kill(reason killReason) {
	if w.reason.CompareAndSwap(uint32(notKilled), uint32(reason)) && reason != killCrashed {
		select {
		case <-w.dead: // it died on its own first
		default:
			w.pool.killed.Add(1)
		}
	}
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	_ = w.cmd.Process.Kill()
	past := time.Unix(1, 0)
	_ = w.out.f.SetReadDeadline(past)
	_ = w.in.f.SetWriteDeadline(past)
}

// alive reports whether the process has neither exited nor been killed.
func (w *proc) alive() bool {
	select {
	case <-w.dead:
		return false
	default:
		return w.killReason() == notKilled
	}
}

// tailBuffer keeps the first and the last max bytes written to it: a Go
// runtime crash names its cause first and then dumps goroutines.
type tailBuffer struct {
	mu   sync.Mutex // guards head and buf: the process's stderr copier writes, callers read
	head []byte
	buf  []byte
	max  int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Head returns the first bytes written.
func (t *tailBuffer) Head() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head)
}

func firstWords(s string) string {
	if s == "" {
		return "no message"
	}
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// replySpin and requestSpin are how long the supervisor polls for a reply
// (only while no other call is inside the pool's Call: with several in
// flight the process has other work, and the CPUs are shared) and a worker
// for its next request before parking (spinner). 50 µs covers a short
// call's round trip; measured on the sequential isolated echo
// (`go test -run '^$' -bench 'Rows/echo/toolhost-isolated$' ./test/bench`):
// p50 110-123 µs without, 57-74 µs polling for replies only, 29-30 µs both.
const (
	replySpin   = 50 * time.Microsecond
	requestSpin = 50 * time.Microsecond
)

// longSpin is the polling budget of both sides once the last soloCalls
// calls each came into the pool alone and within longSpin of the end of
// the one before: a caller that calls one call right after another, for
// which a wake-up is most of what a short call costs. (A caller with a
// pause between calls — one HTTP client, whose every call also waits for
// the audit log's fsync — would have the worker poll in vain for its next
// request: server and workers spent 60-140 µs more CPU per call for the
// same calls/s, three pairs.) 250 µs covers a Go guest's call (the time
// sample: p50 224 → 89 µs) and the rare slow reply that made a short
// call's p99 (echo: p99 143-170 → 74-80 µs). Under concurrent load the
// calls overlap, and the budget stays at 50 µs: with 250 µs whenever a
// call happened to be alone, 8 HTTP clients got 6-17% fewer calls/s (five
// pairs), the polling taking CPU the other processes needed (RATIONALE.md,
// "Sequential calls poll the worker pipes instead of parking").
const (
	longSpin  = 250 * time.Microsecond
	soloCalls = 32
)

// solo reports whether the last soloCalls calls came into the pool alone,
// each right after the one before.
func (p *Pool) solo() bool { return p.soloRun.Load() >= soloCalls }

// enter counts a call coming into the pool (calls, soloRun); leave counts
// it out.
func (p *Pool) enter() {
	alone := p.calls.Add(1) == 1
	if alone && time.Since(p.epoch)-time.Duration(p.lastEnd.Load()) < longSpin {
		p.soloRun.Add(1)
	} else {
		p.soloRun.Store(0)
	}
}

func (p *Pool) leave() {
	p.lastEnd.Store(int64(time.Since(p.epoch)))
	p.calls.Add(-1)
}

// pipes connects cmd's stdin and stdout to two pipes and returns the
// supervisor's ends, read and written with raw system calls (rawPipe);
// closeChildEnds closes the worker's ends once it has started (or failed
// to).
func pipes(cmd *exec.Cmd) (stdin, stdout *rawPipe, closeChildEnds func(), err error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("worker: pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, fmt.Errorf("worker: pipe: %w", err)
	}
	if stdin, err = newRawPipe(inW); err == nil {
		stdout, err = newRawPipe(outR)
	}
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, nil, nil, fmt.Errorf("worker: pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	return stdin, stdout, func() { inR.Close(); outW.Close() }, nil
}
