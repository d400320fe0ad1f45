package worker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine/enginetest"
	"github.com/toolhost/toolhost/plugin"
	"golang.org/x/sys/unix"
)

// A worker runs at the host's priority while its requests are short, and
// workerNice levels below it, every thread of it, once a request has run
// for longCall: the host's supervision (deadline kills, cancellation, the
// audit record, the answer) must not wait for a core behind the plugins
// it supervises. A worker lowered once is replaced after its request (the
// host could not raise it back), so the pool is at the host's priority
// again. What counts is the CPU a request used: one that waited for a core
// keeps its worker where it was (TestWaitingForACoreIsNotLong).
func TestLongRequestsRunBelowTheHostsPriority(t *testing.T) {
	p := newTestPool(t, Options{Workers: 1, MaxWorkers: 1})
	m := compile(t, p, enginetest.Spec("prio", plugin.Limits{TimeoutMS: 30000}))
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := 20 - prio
	lowered := min(host+workerNice, 19)

	only := func() *proc { return onlyWorker(p) }
	nices := func(w *proc) []int { t.Helper(); return threadNices(t, w.cmd.Process.Pid) }
	allAre := allNice

	for range 20 {
		if _, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	first := only()
	if ns := nices(first); !allAre(ns, host) {
		t.Fatalf("after short calls the worker's threads have nice %v, want the host's %d", ns, host)
	}

	done := make(chan error, 1)
	go func() {
		out, err := m.Call(context.Background(), "busy", []byte(`{}`))
		if err == nil && string(out) != "ok" {
			err = os.ErrInvalid
		}
		done <- err
	}()
	// While the long call runs, its worker drops below the host.
	var seen []int
	for deadline := time.Now().Add(20 * time.Second); ; {
		if seen = nices(first); allAre(seen, lowered) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the long call ended (%v) before its worker was seen at nice %d (last seen %v)", err, lowered, seen)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long call's worker threads have nice %v, want %d", seen, lowered)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("the long call: %v", err)
	}
	// It is replaced after it, and the next worker runs at the host's priority.
	if _, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	next := only()
	if next == nil || next == first {
		t.Fatalf("the worker lowered for a long call was kept in the pool")
	}
	if first.killReason() != killRetired {
		t.Errorf("the lowered worker ended %v, want retired", first.killReason())
	}
	if ns := nices(next); !allAre(ns, host) {
		t.Errorf("the replacement's threads have nice %v, want the host's %d", ns, host)
	}
}

// niceOf reads the nice value from a /proc/PID/task/TID/stat file: field
// 19, counted after the command's closing parenthesis.
func niceOf(t *testing.T, stat string) int {
	t.Helper()
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, err := strconv.Atoi(fields[16]) // state is field 3, nice field 19
	if err != nil {
		t.Fatalf("%s: %v", stat, err)
	}
	return n
}

// TestWaitingForACoreIsNotLong: a request whose worker got no CPU for
// longer than longCall (here: the worker stopped, as a loaded machine can
// leave it waiting for a core) neither lowers nor retires it, for a call
// or a load. Judged by the clock, each such call retired its worker, and
// on a loaded machine the replacement's module load waited as long: 400
// concurrent calls of the Go time sample got 17 answers, the rest busy or
// timeout.
func TestWaitingForACoreIsNotLong(t *testing.T) {
	p := newTestPool(t, Options{Workers: 1, MaxWorkers: 1})
	m := compile(t, p, enginetest.Spec("wait", plugin.Limits{TimeoutMS: 30000}))
	if _, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	w := onlyWorker(p)
	pid := w.cmd.Process.Pid
	if err := unix.Kill(-pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	cont := func() {
		if stopped {
			stopped = false
			if err := unix.Kill(-pid, unix.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer cont()
	for _, kind := range []byte{kindCall, kindLoad} {
		// A watchdog of a request sent long ago (its zero start), checked
		// as often as a request of any length is.
		wd := &watchdog{p: p, w: w, kind: kind}
		for range 20 {
			_, cpu, ok := usage(pid)
			if !ok {
				t.Fatal("no CPU time for the stopped worker")
			}
			wd.lowerIfLong(cpu)
		}
		if w.lowered.Load() || w.retire.Load() {
			t.Fatalf("kind %d: a worker that used no CPU was lowered (%v) or marked for retirement (%v)", kind, w.lowered.Load(), w.retire.Load())
		}
	}
	cont()
	if _, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if !w.alive() || w.killReason() != notKilled {
		t.Fatalf("the worker was replaced (%v)", w.killReason())
	}
}

// TestLoadLoweredWorkerKeepsItsModuleAndPriorityComesBack: a worker
// lowered during a load (a compile that used longCall of CPU) is not
// retired — its replacement would load the module again — and when a load
// ends, a lowered worker gets the host's priority back where the host may
// raise it (root, as in CI); where it may not, it stays lowered.
func TestLoadLoweredWorkerKeepsItsModuleAndPriorityComesBack(t *testing.T) {
	p := newTestPool(t, Options{Workers: 1, MaxWorkers: 1})
	m := compile(t, p, enginetest.Spec("loadprio", plugin.Limits{TimeoutMS: 30000}))
	if _, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := 20 - prio
	w := onlyWorker(p)
	pid := w.cmd.Process.Pid

	// A load's watchdog that has seen an hour of CPU since its base.
	wd := &watchdog{p: p, w: w, kind: kindLoad, cpuBase: -time.Hour, cpuBaseSet: true}
	wd.lowerIfLong(0)
	if !w.lowered.Load() || w.retire.Load() {
		t.Fatalf("after a long load: lowered %v, retire %v; want lowered and kept", w.lowered.Load(), w.retire.Load())
	}
	if ns := threadNices(t, pid); !allNice(ns, min(host+workerNice, 19)) {
		t.Fatalf("a worker lowered by a load has thread nices %v, want %d", ns, min(host+workerNice, 19))
	}

	// The next load on it (another module) ends with the priority back.
	compile(t, p, enginetest.Spec("loadprio2", plugin.Limits{TimeoutMS: 30000}))
	want := host
	if unix.Geteuid() != 0 && w.lowered.Load() {
		want = min(host+workerNice, 19) // this host may not raise it
	} else if w.lowered.Load() {
		t.Fatal("as root, a worker lowered by a load is still lowered after the next load ended")
	}
	if ns := threadNices(t, pid); !allNice(ns, want) {
		t.Errorf("after the load: thread nices %v, want %d", ns, want)
	}
	if _, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if !w.alive() || w.killReason() != notKilled {
		t.Fatalf("the worker was replaced (%v); a load-lowered worker keeps its modules", w.killReason())
	}
}

// threadNices is the nice value of every thread of process pid.
func threadNices(t *testing.T, pid int) []int {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
	if len(tasks) == 0 {
		t.Fatalf("worker %d: no threads found", pid)
	}
	var out []int
	for _, task := range tasks {
		out = append(out, niceOf(t, task))
	}
	return out
}

func allNice(ns []int, want int) bool {
	for _, n := range ns {
		if n != want {
			return false
		}
	}
	return true
}

// onlyWorker is the pool's live worker (the tests here run one), or nil.
func onlyWorker(p *Pool) *proc {
	p.procsMu.Lock()
	defer p.procsMu.Unlock()
	for w := range p.procs {
		if w.alive() {
			return w
		}
	}
	return nil
}
