package worker

import (
	"context"
	"encoding/json"
	"io"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine/enginetest"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// The worker side of cancellation: the worker does not stop running wasm
// (it is Supervised: the pool kills it if the call does not end soon), but
// a call whose cancel frame arrived while it ran answers cancelled, never
// its result, and the worker goes on serving; a cancel frame that arrives
// after its request has answered changes nothing for the next one.
func TestServeCancelFrame(t *testing.T) {
	hostR, workerW := io.Pipe()
	workerR, hostW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(context.Background(), workerR, workerW, t.TempDir()) }()
	defer func() {
		hostW.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	instantiating := 0
	read := func() (replyHeader, []byte) {
		t.Helper()
		f, err := (*relay)(nil).readReply(hostR, 4<<20, func() { instantiating++ })
		if err != nil {
			t.Fatal(err)
		}
		var h replyHeader
		if f.kind == kindReply {
			if err := json.Unmarshal(f.header, &h); err != nil {
				t.Fatal(err)
			}
		}
		return h, f.body
	}
	send := func(kind byte, h any, body []byte) {
		t.Helper()
		if err := writeFrame(hostW, kind, h, body); err != nil {
			t.Fatal(err)
		}
	}
	read() // ready
	spec := enginetest.Spec("serve_cancel", plugin.Limits{TimeoutMS: 60_000, MemoryPages: 64, MaxOutputBytes: 2 << 20})
	send(kindLoad, loadHeader{Key: spec.Key, Name: spec.Name, MemoryPages: spec.Limits.MemoryPages, TimeoutMS: spec.Limits.TimeoutMS,
		MaxOutput: spec.Limits.MaxOutputBytes, Exports: spec.Exports}, spec.Wasm)
	if h, _ := read(); h.Code != "" || instantiating != 1 {
		t.Fatalf("load: %+v after %d kindInstantiating frames, want success after 1", h, instantiating)
	}

	// The suite's echo makes two kernel calls per byte: 256 KiB takes
	// most of a second, long enough for the cancel frame to arrive while
	// it runs.
	big := make([]byte, 256<<10)
	for i := range big {
		big[i] = 'x'
	}
	send(kindCall, callHeader{Key: spec.Key, Export: "echo"}, big)
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	send(kindCancel, struct{}{}, nil)
	if h, body := read(); h.Code != string(toolerr.CodeCancelled) || len(body) != 0 {
		t.Fatalf("cancelled echo answered %+v with %d bytes, want cancelled and nothing", h, len(body))
	}
	t.Logf("the worker answered the cancelled call %v after its cancel frame", time.Since(start).Round(time.Microsecond))

	// A late cancel (after the answer) must not reach the next request.
	send(kindCall, callHeader{Key: spec.Key, Export: "echo"}, []byte(`{}`))
	if h, _ := read(); h.Code != "" {
		t.Fatalf("echo: %+v", h)
	}
	send(kindCancel, struct{}{}, nil)
	send(kindCall, callHeader{Key: spec.Key, Export: "count"}, []byte(`{}`))
	if h, _ := read(); h.Code != "" {
		t.Fatalf("the call after a late cancel frame: %+v", h)
	}
}

// TestTuneGCFollowsTheLiveHeap: the worker's memory limit is at least
// twice its live heap, so a worker holding many modules does not collect
// after every few allocations, and it comes back down to the floor.
func TestTuneGCFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer func(g uint64) { gcTarget = g }(gcTarget)
	debug.SetMemoryLimit(gcLimit) // as Serve starts
	gcTarget = gcLimit
	live := make([]byte, 64<<20)
	for i := range live {
		live[i] = 1
	}
	runtime.GC()
	heldBytes()
	tuneGC()
	if lim := debug.SetMemoryLimit(-1); lim < 2*int64(len(live)) {
		t.Fatalf("memory limit %d MiB with a 64 MiB live heap, want at least 128", lim>>20)
	}
	runtime.KeepAlive(live)
	live = nil
	runtime.GC()
	heldBytes()
	tuneGC()
	if lim := debug.SetMemoryLimit(-1); lim > gcLimit*5/4 {
		t.Fatalf("memory limit %d MiB once the live heap is gone, want about %d", lim>>20, gcLimit>>20)
	}
}

// TestCompilingUsesEveryCPUAndGOGCPacing: a worker compiles a module on
// every CPU under GOGC=100 pacing (below compileMemoryLimit), not on its
// one call-time P under gcLimit with GOGC off, where the collector ran
// without pause through a Go guest's compile; restore puts the call-time
// settings back exactly.
func TestCompilingUsesEveryCPUAndGOGCPacing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(gcLimit))

	restore := compiling()
	if got := runtime.GOMAXPROCS(0); got != runtime.NumCPU() {
		t.Errorf("GOMAXPROCS while compiling = %d, want every CPU (%d)", got, runtime.NumCPU())
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC while compiling = %d, want 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != compileMemoryLimit {
		t.Errorf("memory limit while compiling = %d MiB, want %d", got>>20, compileMemoryLimit>>20)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS after compiling = %d, want the worker's 1 back", got)
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GOGC after compiling = %d, want off (-1) back", got)
	}
	if got := debug.SetMemoryLimit(-1); got != gcLimit {
		t.Errorf("memory limit after compiling = %d MiB, want %d back", got>>20, gcLimit>>20)
	}
}
