package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

//go:generate go run ./testdata/hostile/gen.go ./testdata/hostile

// hostileLimits are the limits of most hostile plugins: 1 MiB of memory,
// 1 KiB of output, and 30 s, which they must not need: their class is not
// about time, and a deadline they might reach on a loaded machine (under
// -race, a deep recursion takes over a second; the deadline runs from the
// call's arrival, module load included) would blur the code.
var hostileLimits = plugin.Limits{MemoryPages: 16, TimeoutMS: 30000, MaxOutputBytes: 1024}

// deadlineLimits are for the classes that run until stopped: 300 ms.
var deadlineLimits = plugin.Limits{MemoryPages: 16, TimeoutMS: 300, MaxOutputBytes: 1024}

// hostileCase is one class of hostile plugin and what must happen to it.
type hostileCase struct {
	class  string // the SECURITY.md row
	file   string // corpus file, testdata/hostile/FILE.wasm
	wasm   func() []byte
	export string
	limits plugin.Limits
	args   string
	// refused: Install must fail with host.ErrInvalidModule. Otherwise the
	// call must end with code want ("" = success).
	refused bool
	want    toolerr.Code
	// message must appear in the error message (or the install error).
	message string
}

func hostileCases() []hostileCase {
	c := []hostileCase{
		{class: "infinite loop", file: "infinite_loop", export: "run", want: toolerr.CodeTimeout, limits: deadlineLimits},
		{class: "loop-free call tree (2^41 calls)", file: "call_tree", export: "run", want: toolerr.CodeTimeout, message: "stopped", limits: deadlineLimits},
		{class: "unbounded recursion", file: "recursion", export: "run", want: toolerr.CodePluginError, message: "stack overflow"},
		{class: "unbounded recursion, fat frames", file: "recursion", export: "run_fat", want: toolerr.CodePluginError, message: "stack overflow"},
		{class: "memory.grow page by page past the limit (1 MiB)", file: "memory_grow", export: "grow_loop", want: toolerr.CodeMemoryLimit},
		{class: "memory.grow page by page past the limit (256 MiB)", file: "memory_grow", export: "grow_loop", want: toolerr.CodeMemoryLimit,
			limits: plugin.Limits{MemoryPages: 4096, TimeoutMS: 30000, MaxOutputBytes: 1024}},
		{class: "memory.grow by 3.75 GiB at once", file: "memory_grow", export: "grow_huge", want: toolerr.CodeMemoryLimit},
		{class: "memory.grow beyond the wasm32 address space", file: "memory_grow", export: "grow_beyond_wasm32", want: toolerr.CodePluginError, message: "unreachable"},
		{class: "table declaring 10^7 elements", file: "table_huge_min", export: "run", refused: true, message: "table"},
		{class: "table without maximum + table.grow", file: "table_grow_nomax", export: "run", refused: true, message: "table.grow"},
		{class: "table.grow up to its declared maximum and beyond", file: "table_grow_bounded", export: "run", want: toolerr.CodePluginError, message: "unreachable"},
		{class: "data segment outside memory", file: "data_oob", export: "run", refused: true, message: "out of bounds"},
		{class: "data segments of 17 MiB", wasm: func() []byte { return bigDataModule(17<<20, 280) }, export: "run", refused: true, message: "data",
			limits: plugin.Limits{MemoryPages: 300, TimeoutMS: 5000, MaxOutputBytes: 1024}},
		{class: "data segment of 15 MiB (accepted; copied per call)", wasm: func() []byte { return bigDataModule(15<<20, 256) }, export: "run",
			limits: plugin.Limits{MemoryPages: 256, TimeoutMS: 5000, MaxOutputBytes: 1024}},
		{class: "output of 2 MiB, max_output_bytes 1 KiB", file: "output", export: "over_limit", want: toolerr.CodeOutputTooLarge,
			limits: plugin.Limits{MemoryPages: 64, TimeoutMS: 30000, MaxOutputBytes: 1024}},
		{class: "output of 64 MiB, beyond memory", file: "output", export: "beyond_memory", want: toolerr.CodeOutputTooLarge},
		{class: "output range outside memory", file: "output", export: "bad_range", want: toolerr.CodePluginError, message: "outside its memory"},
		{class: "host allocator abuse (1 GiB .. 2^64-1 bytes, 4000 times)", file: "alloc_abuse", export: "run", want: toolerr.CodeMemoryLimit},
		{class: "WASI proc_exit(7)", file: "proc_exit", export: "exit_nonzero", want: toolerr.CodePluginError, message: "code 7"},
		{class: "WASI proc_exit(0) (success, no output)", file: "proc_exit", export: "exit_zero"},
		{class: "import the host does not provide", file: "import_unknown", export: "run", refused: true, message: "not provided"},
		{class: "import of extism http_request", file: "import_http_request", export: "run", refused: true, message: "http_request"},
		{class: "import with the wrong signature", file: "import_bad_signature", export: "run", refused: true, message: "signature mismatch"},
		{class: "toolhost.http_fetch to a host not allowed", file: "fetch", export: "fetch", args: `{"url":"http://example.com/"}`,
			want: toolerr.CodePermissionDenied, message: "allowed_hosts"},
		{class: "toolhost.http_fetch to an allowed host resolving to loopback", file: "fetch", export: "fetch", args: `{"url":"http://localhost:9/"}`,
			want: toolerr.CodePermissionDenied, message: "loopback"},
	}
	for _, trap := range []struct{ export, msg string }{
		{"unreachable", "unreachable"}, {"div_zero", "divide by zero"}, {"int_overflow", "integer overflow"},
		{"bad_conversion", "invalid conversion"}, {"oob_load", "out of bounds memory access"}, {"null_call", "invalid table access"},
	} {
		c = append(c, hostileCase{class: "trap: " + trap.msg, file: "traps", export: trap.export, want: toolerr.CodePluginError, message: trap.msg})
	}
	for _, fn := range []string{"store_u8", "store_u64", "load_u8", "load_u64", "length", "free"} {
		c = append(c, hostileCase{class: "host function " + fn + " at an offset outside memory", file: "hostfn_offsets", export: fn,
			want: toolerr.CodePluginError, message: "outside its memory to " + fn})
	}
	c = append(c,
		hostileCase{class: "host function input_load_u64 past the input", file: "hostfn_offsets", export: "input_load_u64", want: toolerr.CodePluginError, message: "past the end of its input"},
		hostileCase{class: "host function error_set at an offset outside memory", file: "hostfn_offsets", export: "error_set", want: toolerr.CodePluginError},
		hostileCase{class: "host function output_set with a 2^48-byte range", file: "hostfn_offsets", export: "output_set", want: toolerr.CodeOutputTooLarge},
		hostileCase{class: "toolhost.http_fetch with a garbage offset", file: "hostfn_offsets", export: "http_fetch", want: toolerr.CodePluginError, message: "bad request"},
	)
	c = append(c,
		hostileCase{class: "error message with terminal escapes, bad UTF-8, RTL override", file: "error_message", export: "escapes", want: toolerr.CodePluginError, message: "boom"},
		// 128 Ki host calls take seconds on a loaded machine, and the
		// deadline runs from the call's arrival (module load included):
		// the case is about the message, so its deadline is generous.
		hostileCase{class: "error message of 128 KiB", file: "error_message", export: "huge", want: toolerr.CodePluginError, message: "AAAA",
			limits: plugin.Limits{MemoryPages: 64, TimeoutMS: 30000, MaxOutputBytes: 1024}},
	)
	for _, bomb := range bombNames() {
		c = append(c, hostileCase{class: "decoder bomb: " + bomb, file: "bomb_" + bomb, export: "run", refused: true})
	}
	return c
}

// hostileResult is one measured row of the SECURITY.md table.
type hostileResult struct {
	class, outcome     string
	elapsed, overrun   time.Duration
	hostPeak, workPeak int64
}

// TestHostile runs every class of the hostile corpus through the real
// stack (signed install, worker pool, host), checks the typed outcome and
// the time it took, checks that a benign tool answers after each, and
// prints the measured table that SECURITY.md reproduces:
//
//	go test -run 'TestHostile$' -v ./host/
func TestHostile(t *testing.T) {
	r := newRig(t, rigOptions{workers: 2})
	r.installEcho()
	r.echoAnswers(t)
	var results []hostileResult
	for i, c := range hostileCases() {
		t.Run(c.class, func(t *testing.T) {
			res := runHostileCase(t, r, i, c)
			results = append(results, res)
			r.echoAnswers(t)
		})
	}
	deadlineTo := 10 * time.Second
	waitWorkers(t, r, 2, deadlineTo)
	st := r.pool.Stats()
	t.Logf("workers: %d alive, %d started, %d killed by the supervisor, %d crashed; host peak RSS %s over the whole run (VmHWM)",
		st.Workers, st.Started, st.Killed, st.Crashed, mib(hostPeak()))
	var b strings.Builder
	b.WriteString("\n| class | outcome | call time | after deadline | host peak RSS | worker peak RSS |\n|---|---|---|---|---|---|\n")
	for _, res := range results {
		over := "—"
		if res.overrun > 0 {
			over = fmt.Sprintf("+%d ms", res.overrun.Milliseconds())
		}
		work := "—" // refusals: the worker does not report memory for a load
		if res.workPeak > 0 {
			work = mib(res.workPeak)
		}
		fmt.Fprintf(&b, "| %s | %s | %d ms | %s | %s | %s |\n", res.class, res.outcome, res.elapsed.Milliseconds(), over, mib(res.hostPeak), work)
	}
	t.Log(b.String())
}

func runHostileCase(t *testing.T, r *rig, i int, c hostileCase) hostileResult {
	res := hostileResult{class: c.class}
	limits := c.limits
	if limits == (plugin.Limits{}) {
		limits = hostileLimits
	}
	wasm := []byte(nil)
	if c.wasm != nil {
		wasm = c.wasm()
	} else {
		wasm = corpus(t, c.file)
	}
	d := pluginDef{name: fmt.Sprintf("h%02d", i), wasm: wasm, exports: []string{c.export}, limits: limits}
	if c.file == "fetch" {
		d.hosts = []string{"localhost"}
	}
	resetHostPeak()
	r.pool.ResetPeakRSS()
	start := time.Now()
	err := r.install(d)
	if c.refused {
		res.elapsed = time.Since(start)
		res.hostPeak = hostPeak()
		if !errors.Is(err, host.ErrInvalidModule) {
			t.Fatalf("install: got %v, want the module refused (%v)", err, host.ErrInvalidModule)
		}
		if !strings.Contains(err.Error(), c.message) {
			t.Errorf("install error %q does not mention %q", err, c.message)
		}
		if res.elapsed > 2*time.Second {
			t.Errorf("refusing the module took %v", res.elapsed)
		}
		res.outcome = "refused at install: invalid_module"
		t.Logf("refused in %v: %v", res.elapsed.Round(time.Millisecond), err)
		return res
	}
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	args := c.args
	if args == "" {
		args = "{}"
	}
	resetHostPeak()
	r.pool.ResetPeakRSS()
	start = time.Now()
	out, err := r.host.Call(context.Background(), toolName(d.name, c.export), []byte(args))
	res.elapsed = time.Since(start)
	res.hostPeak, res.workPeak = hostPeak(), r.pool.Stats().PeakRSSBytes
	deadline := time.Duration(limits.TimeoutMS) * time.Millisecond
	res.overrun = res.elapsed - deadline
	code := toolerr.CodeOf(err)
	switch {
	case err != nil && code == "":
		t.Fatalf("untyped error: %v", err)
	case code != c.want:
		t.Fatalf("got code %q (%v, output %q), want %q", code, err, out, c.want)
	case err != nil && !strings.Contains(err.Error(), c.message):
		t.Errorf("error %q does not mention %q", err, c.message)
	}
	if err != nil {
		msg := err.Error()
		if len(msg) > 4096 {
			t.Errorf("the error message is %d bytes", len(msg))
		}
		if strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x202e }) || !utf8.ValidString(msg) {
			t.Errorf("the error message is not printable: %q", msg)
		}
	}
	if res.elapsed > deadline+2*time.Second {
		t.Errorf("the call took %v, its deadline is %v", res.elapsed, deadline)
	}
	if code == "" {
		res.outcome = fmt.Sprintf("success, result %s", out)
	} else {
		res.outcome = string(code)
	}
	t.Logf("%s in %v (%+d ms after the %v deadline), host peak %s, worker peak %s: %v",
		res.outcome, res.elapsed.Round(time.Millisecond), res.overrun.Milliseconds(), deadline, mib(res.hostPeak), mib(res.workPeak), err)
	return res
}

// waitWorkers waits until the pool has n live workers again (replacements
// start in the background).
func waitWorkers(t testing.TB, r *rig, n int, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	for r.pool.Stats().Workers != n {
		if time.Now().After(end) {
			t.Fatalf("the pool has %d workers, want %d", r.pool.Stats().Workers, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
