package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
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
