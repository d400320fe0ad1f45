package host_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// A plugin never holds every worker: while more calls of a spinning plugin
// than there are workers run, another plugin's tool still answers at once,
// and the surplus spinning calls wait for their plugin's share (or end as
// busy when their caller's deadline comes first).
func TestOnePluginCannotHoldEveryWorker(t *testing.T) {
	r := newRig(t, rigOptions{workers: 2})
	r.installEcho()
	r.mustInstall(pluginDef{name: "loop", wasm: corpus(t, "infinite_loop"), exports: []string{"run"},
		limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 3000, MaxOutputBytes: 1024}})
	r.echoAnswers(t)

	var wg sync.WaitGroup
	codes := make(chan toolerr.Code, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			_, err := r.host.Call(ctx, "loop_run", []byte(`{}`))
			codes <- toolerr.CodeOf(err)
		}()
	}
	time.Sleep(200 * time.Millisecond) // the loops are running
	start := time.Now()
	r.echoAnswers(t)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the benign tool waited %v behind a spinning plugin", d)
	}
	wg.Wait()
	close(codes)
	var busy int
	for c := range codes {
		switch c {
		case toolerr.CodeBusy:
			busy++
		case toolerr.CodeTimeout:
		default:
			t.Errorf("spinning call ended with %q, want timeout or busy", c)
		}
	}
	if busy == 0 {
		t.Error("no spinning call waited for its plugin's share of the workers")
	}
}
