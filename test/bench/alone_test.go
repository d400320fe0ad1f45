package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// extismChild is the argument that makes this test binary the extism
// child: WASM EXPORT INPUT N.
const extismChild = "bench-extism-child"

// runExtismChild loads the module with extism go-sdk as its README shows,
// warms it up, calls the export N times in a loop and prints the
// nanoseconds the N calls took.
func runExtismChild(args []string) int {
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: bench-extism-child WASM EXPORT INPUT N")
		return 2
	}
	wasm, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, err := strconv.Atoi(args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	p, err := extism.NewPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}}, extism.PluginConfig{EnableWasi: true}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	export, input := args[1], []byte(args[2])
	call := func() error {
		rc, out, err := p.Call(export, input)
		if err == nil && (rc != 0 || len(out) == 0) {
			err = fmt.Errorf("rc %d, %d bytes out", rc, len(out))
		}
		return err
	}
	for range min(n, 1000) { // warm-up, as the other rows get
		if err := call(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	start := time.Now()
	for range n {
		if err := call(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println(time.Since(start).Nanoseconds())
	return 0
}

// benchExtismAlone is the subject's extism-direct row as an outside check
// would measure it: b.N calls in a loop in a fresh process of their own.
// It reports calls/s only (no per-call clock in that loop).
func benchExtismAlone(b *testing.B, s *subject) {
	path := filepath.Join(b.TempDir(), "module.wasm")
	if err := os.WriteFile(path, s.wasm, 0o644); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(os.Args[0], extismChild, path, s.export, string(s.input), strconv.Itoa(b.N)).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		b.Fatalf("extism child: %v %s", err, stderr)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || ns <= 0 {
		b.Fatalf("extism child printed %q", out)
	}
	b.ReportMetric(float64(b.N)/(float64(ns)/1e9), "calls/s")
}

// outsideCheckClients and outsideCheckSeconds: the HTTP load of the
// outside-check row (the 8 keep-alive clients), and how long each
// half of it measures.
const (
	outsideCheckClients = 8
	outsideCheckSeconds = "3"
)

// floorKind is what test/bench/floorserver does for a call besides the
// durable record.
type floorKind int

const (
	floorPlain    floorKind = iota // nothing: answers with the arguments
	floorHop                       // a round trip to a child process that runs nothing
	floorIsolated                  // the module, run in a child process (extism)
)

// startFloorServer builds and starts test/bench/floorserver (the floor
// under toolhost-http: HTTP and a durable record per call, and what kind
// adds; floorIsolated runs s's module) and returns its URL; it is stopped
// when tb ends.
func startFloorServer(tb testing.TB, kind floorKind, s *subject) string {
	tb.Helper()
	dir := tb.TempDir()
	args := []string{dir}
	switch kind {
	case floorHop:
		args = append(args, "-", "-")
	case floorIsolated:
		wasm := filepath.Join(dir, "module.wasm")
		if err := os.WriteFile(wasm, s.wasm, 0o644); err != nil {
			tb.Fatal(err)
		}
		args = append(args, wasm, s.export)
	}
	cmd := exec.Command(testplugins.Program(tb, "test/bench/floorserver"), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "serving ")
	if err != nil || !ok {
		tb.Fatalf("floorserver printed %q (%v)", line, err)
	}
	return url
}

// outsideCheck runs test/bench/outsidecheck, a small program of its own,
// against the server at url for seconds per half: extism go-sdk in its
// process, then HTTP clients on the server, one after the other.
func outsideCheck(tb testing.TB, s *subject, input []byte, url, token, seconds string) (extismRate, httpRate, ratio float64) {
	tb.Helper()
	prog, wasm := testplugins.Program(tb, "test/bench/outsidecheck"), filepath.Join(tb.TempDir(), "module.wasm")
	if err := os.WriteFile(wasm, s.wasm, 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(prog, wasm, s.export, string(input), url, s.tool, strconv.Itoa(outsideCheckClients), seconds)
	cmd.Env = append(os.Environ(), "TOOLHOST_TOKEN="+token)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		tb.Fatalf("outsidecheck: %v %s", err, stderr)
	}
	var clients int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "extism_calls_per_s=%g http_calls_per_s=%g ratio=%g clients=%d", &extismRate, &httpRate, &ratio, &clients); err != nil {
		tb.Fatalf("outsidecheck printed %q: %v", out, err)
	}
	return extismRate, httpRate, ratio
}

// outsideCheckInputs are the arguments of the outside-check rows besides
// the subject's own (66 bytes): the Done-when does not say what a check
// sends, and extism go-sdk's speed on the echo module depends on it while
// toolhost's HTTP rate does not. The module copies its input 8 bytes per
// kernel call and the last len%8 bytes one by one, and extism go-sdk
// builds a wazero call engine (~12 KB) for each single-byte kernel call
// (go test -benchmem: 35 allocations and 118 KB per call at len%8 = 0,
// 63 and 283 KB at 7), so a tail of 7 bytes makes its call ~2.4x slower.
// One small object (15 bytes, tail 7) and the subject's shape with a tail
// of 0 and of 7 bytes; RATIONALE.md, "The outside check's ratio follows
// the input's length".
var outsideCheckInputs = []struct{ row, input string }{
	{"outside-check-small-input", `{"msg":"hello"}`},
	{"outside-check-64-bytes", `{"query":"weather in Ulm","units":"metric","days":3,"lang":"en"}`},
	{"outside-check-71-bytes", `{"query":"weather in Copenhagen","units":"metric","days":3,"lang":"en"}`},
}

// benchOutsideCheck reports outsideCheck's rates and their ratio, once
// per run whatever b.N (the program measures for a fixed time;
// -benchtime above 6 s would repeat it).
func benchOutsideCheck(b *testing.B, s *subject, input []byte, url, token string) {
	b.ResetTimer()
	ext, h, ratio := outsideCheck(b, s, input, url, token, outsideCheckSeconds)
	b.StopTimer()
	b.ReportMetric(ext, "extism_calls/s")
	b.ReportMetric(h, "http_calls/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(0, "ns/op") // one fixed-time run, not per call
}

// The outside check's programs work: the floor server, plain, with a hop
// to a child that runs nothing, or isolated, answers the call route after
// its durable write (isolated: with what the echo module made of the
// arguments) and refuses a body that is not a call,
// and outsidecheck measures it and extism (briefly: a smoke test, not a
// measurement).
func TestOutsideCheckRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	s := echoSubject(t)
	url := startFloorServer(t, floorPlain, s)
	for _, u := range []string{url, startFloorServer(t, floorHop, s), startFloorServer(t, floorIsolated, s)} {
		resp, err := http.Post(u+"/v1/tools/echo/call", "application/json", strings.NewReader(`{"arguments":{"a":[1,2]}}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != `{"result":{"a":[1,2]}}` {
			t.Fatalf("floor server %s answered %d %s", u, resp.StatusCode, body)
		}
		resp, err = http.Post(u+"/v1/tools/echo/call", "application/json", strings.NewReader(`[1]`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("floor server %s answered %d to a body that is not a call, want 400", u, resp.StatusCode)
		}
	}
	ext, h, ratio := outsideCheck(t, s, s.input, url, "", "0.2")
	if ext <= 0 || h <= 0 || ratio <= 0 {
		t.Fatalf("outsidecheck measured extism %v/s, HTTP %v/s, ratio %v: want positive rates", ext, h, ratio)
	}
}
