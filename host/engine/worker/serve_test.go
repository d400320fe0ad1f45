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

// The worker side of cancellation: a cancel frame stops the request in
// progress, which answers cancelled, and the worker goes on serving; a
// cancel frame that arrives after its request has answered changes
// nothing for the next one.
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
	read := func() replyHeader {
		t.Helper()
		f, err := readFrame(hostR, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var h replyHeader
		if f.kind == kindReply {
			if err := json.Unmarshal(f.header, &h); err != nil {
				t.Fatal(err)
			}
		}
		return h
	}
	send := func(kind byte, h any, body []byte) {
		t.Helper()
		if err := writeFrame(hostW, kind, h, body); err != nil {
			t.Fatal(err)
		}
	}
	read() // ready
	spec := enginetest.Spec("serve_cancel", plugin.Limits{TimeoutMS: 30_000})
	send(kindLoad, loadHeader{Key: spec.Key, Name: spec.Name, MemoryPages: spec.Limits.MemoryPages, TimeoutMS: spec.Limits.TimeoutMS,
		MaxOutput: spec.Limits.MaxOutputBytes, Exports: spec.Exports}, spec.Wasm)
	if h := read(); h.Code != "" {
		t.Fatalf("load: %+v", h)
	}

	send(kindCall, callHeader{Key: spec.Key, Export: "loop"}, []byte(`{}`))
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	send(kindCancel, struct{}{}, nil)
	if h := read(); h.Code != string(toolerr.CodeCancelled) {
		t.Fatalf("cancelled loop answered %+v, want cancelled", h)
	}
	t.Logf("the worker answered a cancel frame after %v", time.Since(start).Round(time.Microsecond))

	// A late cancel (after the answer) must not reach the next request.
	send(kindCall, callHeader{Key: spec.Key, Export: "echo"}, []byte(`{}`))
	if h := read(); h.Code != "" {
		t.Fatalf("echo: %+v", h)
	}
	send(kindCancel, struct{}{}, nil)
	send(kindCall, callHeader{Key: spec.Key, Export: "count"}, []byte(`{}`))
	if h := read(); h.Code != "" {
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
