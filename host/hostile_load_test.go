package host_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

var longTests = flag.Bool("long", os.Getenv("TOOLHOST_LONG_TESTS") == "1",
	"run the long hostile tests (10 000 mixed calls; also TOOLHOST_LONG_TESTS=1)")

// mixCall is one call of a mixed workload and the code it must end with.
type mixCall struct {
	tool string
	args string
	want toolerr.Code
	// orBusy accepts busy too: a call whose deadline (which runs from
	// its arrival) is shorter than the wait for a worker ends busy.
	orBusy bool
}

// mixRig installs the benign echo plugin and a hostile plugin per class
// that can run over and over (those refused at install cannot), and
// returns the workload: per 200 calls, weight times each entry.
func mixRig(t testing.TB, workers int) (*rig, []mixCall) {
	r := newRig(t, rigOptions{workers: workers})
	r.installEcho()
	quick := plugin.Limits{MemoryPages: 16, TimeoutMS: 200, MaxOutputBytes: 1024}
	for _, d := range []pluginDef{
		{name: "loop", wasm: corpus(t, "infinite_loop"), exports: []string{"run"}, limits: quick},
		{name: "tree", wasm: corpus(t, "call_tree"), exports: []string{"run"}, limits: quick},
		{name: "recursion", wasm: corpus(t, "recursion"), exports: []string{"run"}, limits: hostileLimits},
		{name: "memory", wasm: corpus(t, "memory_grow"), exports: []string{"grow_loop", "grow_huge"}, limits: hostileLimits},
		{name: "alloc", wasm: corpus(t, "alloc_abuse"), exports: []string{"run"}, limits: hostileLimits},
		{name: "output", wasm: corpus(t, "output"), exports: []string{"over_limit", "beyond_memory", "bad_range"},
			limits: plugin.Limits{MemoryPages: 64, TimeoutMS: 5000, MaxOutputBytes: 1024}},
		{name: "traps", wasm: corpus(t, "traps"), exports: []string{"unreachable", "div_zero", "oob_load", "null_call"}, limits: hostileLimits},
		{name: "exit", wasm: corpus(t, "proc_exit"), exports: []string{"exit_nonzero"}, limits: hostileLimits},
		{name: "hostfn", wasm: corpus(t, "hostfn_offsets"), exports: []string{"store_u8", "load_u64", "output_set", "http_fetch"}, limits: hostileLimits},
		{name: "fetch", wasm: corpus(t, "fetch"), exports: []string{"fetch"}, limits: hostileLimits, hosts: []string{"localhost"}},
	} {
		r.mustInstall(d)
	}
	weighted := []struct {
		n int
		c mixCall
	}{
		{136, mixCall{tool: "echo_echo", want: ""}},
		{1, mixCall{tool: "loop_run", want: toolerr.CodeTimeout, orBusy: true}},
		{1, mixCall{tool: "tree_run", want: toolerr.CodeTimeout, orBusy: true}},
		{1, mixCall{tool: "recursion_run", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "memory_grow_loop", want: toolerr.CodeMemoryLimit}},
		{4, mixCall{tool: "memory_grow_huge", want: toolerr.CodeMemoryLimit}},
		{1, mixCall{tool: "alloc_run", want: toolerr.CodeMemoryLimit}},
		{3, mixCall{tool: "output_over_limit", want: toolerr.CodeOutputTooLarge}},
		{3, mixCall{tool: "output_beyond_memory", want: toolerr.CodeOutputTooLarge}},
		{3, mixCall{tool: "output_bad_range", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "traps_unreachable", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "traps_div_zero", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "traps_oob_load", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "traps_null_call", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "exit_exit_nonzero", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "hostfn_store_u8", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "hostfn_load_u64", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "hostfn_output_set", want: toolerr.CodeOutputTooLarge}},
		{4, mixCall{tool: "hostfn_http_fetch", want: toolerr.CodePluginError}},
		{4, mixCall{tool: "fetch_fetch", args: `{"url":"http://example.com/"}`, want: toolerr.CodePermissionDenied}},
		{3, mixCall{tool: "fetch_fetch", args: `{"url":"http://localhost:9/"}`, want: toolerr.CodePermissionDenied}},
	}
	var mix []mixCall
	for _, w := range weighted {
		for range w.n {
			mix = append(mix, w.c)
		}
	}
	if len(mix) != 200 {
		t.Fatalf("the mix has %d entries, want 200", len(mix))
	}
	// Spread the classes: entry i of the workload is mix[i*7%200] (7 and
	// 200 are coprime, so every entry appears once per 200 calls).
	spread := make([]mixCall, len(mix))
	for i := range mix {
		spread[i] = mix[i*7%len(mix)]
	}
	return r, spread
}

// runMix runs n calls of the workload with the given concurrency and checks
// every outcome; benign calls must return exactly their own arguments.
// With overload, any call may also end busy or timeout: its deadline runs
// from its arrival, and far more calls than workers cannot all finish
// within it (a call admitted late has little of it left to run).
func runMix(t testing.TB, r *rig, mix []mixCall, n, concurrency int, overload bool) map[string]int {
	var next atomic.Int64
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c := mix[i%len(mix)]
				args := c.args
				if args == "" {
					args = `{"call":` + strconv.Itoa(i) + `}`
				}
				out, err := r.host.Call(context.Background(), c.tool, []byte(args))
				code := toolerr.CodeOf(err)
				switch {
				case err != nil && code == "":
					t.Errorf("call %d (%s): untyped error %v", i, c.tool, err)
				case code == toolerr.CodeBusy && (c.orBusy || overload):
				case code == toolerr.CodeTimeout && overload:
				case code != c.want:
					t.Errorf("call %d (%s): got %v, want %q", i, c.tool, err, c.want)
				case c.want == "" && string(out) != args:
					t.Errorf("call %d (%s): got %s, want its own arguments %s", i, c.tool, out, args)
				}
				mu.Lock()
				counts[c.tool+" → "+string(code)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counts
}

// TestHostileConcurrent: 1 000 calls at once, mixing benign and hostile
// plugins over a pool of 2 workers. Every call ends with its own class's
// outcome (benign ones with their own arguments, so no call sees
// another's data) or, overloaded, busy once its deadline passed while it
// waited; and the host and pool are intact afterwards.
func TestHostileConcurrent(t *testing.T) {
	r, mix := mixRig(t, 2)
	resetHostPeak()
	start := time.Now()
	counts := runMix(t, r, mix, 1000, 1000, true)
	elapsed := time.Since(start)
	r.echoAnswers(t)
	waitWorkers(t, r, 2, 10*time.Second)
	st := r.pool.Stats()
	t.Logf("1000 concurrent calls in %v; host peak RSS %s; worker peak RSS %s; pool %+v", elapsed.Round(time.Millisecond), mib(hostPeak()), mib(st.PeakRSSBytes), st)
	logCounts(t, counts)
}

// TestHostileLeak: after thousands of mixed calls, the host's goroutines,
// open files and heap are back to their baseline and the pool has its
// workers. 1 000 calls by default, 10 000 with -long or
// TOOLHOST_LONG_TESTS=1.
func TestHostileLeak(t *testing.T) {
	n := 1000
	if *longTests {
		n = 10_000
	}
	r, mix := mixRig(t, 2)
	runMix(t, r, mix, 200, 4, false) // warm up: every module loaded in every worker
	waitWorkers(t, r, 2, 10*time.Second)
	settle()
	baseG, baseFD, baseHeap := runtime.NumGoroutine(), openFDs(), heapInUse()
	before := r.pool.Stats()
	resetHostPeak()
	start := time.Now()
	counts := runMix(t, r, mix, n, 4, false)
	elapsed := time.Since(start)
	waitWorkers(t, r, 2, 10*time.Second)
	var g, fd int
	var heap uint64
	for end := time.Now().Add(10 * time.Second); ; {
		settle()
		g, fd, heap = runtime.NumGoroutine(), openFDs(), heapInUse()
		if (g <= baseG+2 && fd <= baseFD+2 && heap <= baseHeap+32<<20) || time.Now().After(end) {
			break
		}
	}
	after := r.pool.Stats()
	t.Logf("%d mixed calls in %v (%d workers started, %d killed, %d crashed); goroutines %d → %d, open fds %d → %d, heap in use %s → %s, host peak RSS %s",
		n, elapsed.Round(time.Millisecond), after.Started-before.Started, after.Killed-before.Killed, after.Crashed-before.Crashed,
		baseG, g, baseFD, fd, mib(int64(baseHeap)), mib(int64(heap)), mib(hostPeak()))
	logCounts(t, counts)
	if g > baseG+2 {
		t.Errorf("goroutines: %d after, %d before", g, baseG)
	}
	if fd > baseFD+2 {
		t.Errorf("open files: %d after, %d before", fd, baseFD)
	}
	if heap > baseHeap+32<<20 {
		t.Errorf("heap in use: %s after, %s before", mib(int64(heap)), mib(int64(baseHeap)))
	}
	if after.Workers != 2 {
		t.Errorf("workers: %d, want 2", after.Workers)
	}
	for _, pid := range workerPIDs(t) {
		if rss := residentOf(pid); rss > 512<<20 {
			t.Errorf("worker %d holds %s after the run", pid, mib(rss))
		} else {
			t.Logf("worker %d: %s resident after the run", pid, mib(rss))
		}
	}
	r.echoAnswers(t)
}

func settle() {
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func residentOf(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func logCounts(t testing.TB, counts map[string]int) {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %5d × %s", counts[k], k)
	}
	t.Logf("outcomes:%s", b.String())
}
