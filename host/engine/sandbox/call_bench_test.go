package sandbox

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/plugin"
)

// BenchmarkSupervisedFreshCall is a worker's side of a fresh echo call: a
// supervised engine (as in a worker process), the call's context carrying
// the supervisor's deadline, CallThen and then finish (the reset), as
// worker.Serve does. Its allocs/op is what the worker's collector sees per
// call (RATIONALE.md, "A worker answers before it resets the instance").
func BenchmarkSupervisedFreshCall(b *testing.B) {
	wasm, err := os.ReadFile("../../testdata/echo/echo.wasm")
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewInProcess("")
	if err != nil {
		b.Fatal(err)
	}
	e.Supervised = true
	defer e.Close(context.Background())
	spec := engine.Spec{Key: "echo", Name: "echo", Wasm: wasm, Exports: []string{"echo"},
		Limits: plugin.Limits{MemoryPages: 17, TimeoutMS: 1000, MaxOutputBytes: 4096}}
	mod, err := e.Compile(context.Background(), spec)
	if err != nil {
		b.Fatal(err)
	}
	m := mod.(engine.Finisher)
	input := []byte(`{"query":"weather in Paris","units":"metric","days":3,"lang":"en"}`)
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		out, finish, err := m.CallThen(ctx, "echo", input)
		cancel()
		finish()
		if err != nil || string(out) != string(input) {
			b.Fatalf("echo: %q, %v", out, err)
		}
	}
}
