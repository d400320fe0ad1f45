package worker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/enginetest"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

func compile(t *testing.T, p *Pool, spec engine.Spec) engine.Module {
	t.Helper()
	m, err := p.Compile(context.Background(), spec)
	if err != nil {
		t.Fatalf("Compile %s: %v", spec.Name, err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// spin keeps n calls of m's loop running (each ends at its 1 s timeout
// and is started again) until stop is closed.
func spin(m engine.Module, n int, stop <-chan struct{}, wg *sync.WaitGroup) {
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				m.Call(context.Background(), "loop", []byte(`{}`))
			}
		}()
	}
}

// Two plugins that spin in every worker they can get do not make a third
// plugin, with nothing running, wait: it gets a worker kept for it, and the
// pool grows to keep one for the next.
func TestSpinningPluginsDoNotStarveAnother(t *testing.T) {
	p := newTestPool(t, Options{Workers: 2})
	spinA := compile(t, p, enginetest.Spec("spin_a", plugin.Limits{TimeoutMS: 1000}))
	spinB := compile(t, p, enginetest.Spec("spin_b", plugin.Limits{TimeoutMS: 1000}))
	benign := compile(t, p, enginetest.Spec("benign", plugin.Limits{TimeoutMS: 5000}))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	spin(spinA, 3, stop, &wg)
	spin(spinB, 3, stop, &wg)
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(300 * time.Millisecond) // every worker they may take spins

	var lat []time.Duration
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		start := time.Now()
		out, err := benign.Call(context.Background(), "echo", []byte(`{"ok":true}`))
		if err != nil || string(out) != `{"ok":true}` {
			t.Fatalf("benign call while two plugins spin: %q, %v", out, err)
		}
		lat = append(lat, time.Since(start))
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(lat)
	worst := lat[len(lat)-1]
	t.Logf("benign tool while two plugins spin: %d calls, median %v, worst %v, pool %+v",
		len(lat), lat[len(lat)/2].Round(time.Millisecond), worst.Round(time.Millisecond), p.Stats())
	// Target 250 ms; the bound is generous for a loaded 2-core machine.
	// Before the fair scheduler the benign call waited for a spinner's
	// timeout (1 s) at every turn.
	if worst > 2*time.Second {
		t.Fatalf("the benign tool waited %v behind two spinning plugins", worst)
	}
	if st := p.Stats(); st.Workers > p.opts.MaxWorkers {
		t.Fatalf("the pool grew to %d workers, past its cap of %d", st.Workers, p.opts.MaxWorkers)
	}
}

// A burst of calls to one tool, wider than the pool, waits for workers
// (bounded by each call's deadline) instead of failing at once.
func TestBurstIsAbsorbed(t *testing.T) {
	p := newTestPool(t, Options{Workers: 2})
	m := compile(t, p, enginetest.Spec("burst", plugin.Limits{TimeoutMS: 2000}))
	const total, width = 400, 50
	var ok, failed atomic.Int64
	codes := sync.Map{}
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	start := time.Now()
	for range total {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := m.Call(context.Background(), "echo", []byte(`{}`))
			if err != nil {
				failed.Add(1)
				codes.Store(toolerr.CodeOf(err), true)
				return
			}
			ok.Add(1)
		}()
	}
	wg.Wait()
	t.Logf("%d calls %d wide: %d answered, %d failed in %v", total, width, ok.Load(), failed.Load(), time.Since(start).Round(time.Millisecond))
	if ok.Load() < total*95/100 {
		var cs []toolerr.Code
		codes.Range(func(k, _ any) bool { cs = append(cs, k.(toolerr.Code)); return true })
		t.Fatalf("only %d of %d calls answered (failures: %v)", ok.Load(), total, cs)
	}
}

// A cancelled call frees its worker and its plugin's share: with a single
// worker, the plugin's next call answers.
func TestCancelFreesTheWorker(t *testing.T) {
	p := newTestPool(t, Options{Workers: 1, MaxWorkers: 1})
	m := compile(t, p, enginetest.Spec("cancel_one", plugin.Limits{TimeoutMS: 30_000}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, "loop", []byte(`{}`))
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cancelled := time.Now()
	cancel()
	if err := <-errc; toolerr.CodeOf(err) != toolerr.CodeCancelled {
		t.Fatalf("cancelled call: %v, want cancelled", err)
	}
	out, err := m.Call(context.Background(), "echo", []byte(`{}`))
	freed := time.Since(cancelled)
	if err != nil || string(out) != `{}` {
		t.Fatalf("the next call after a cancellation: %q, %v", out, err)
	}
	// Whether the worker stopped the call itself (kept) or was killed
	// (cancelGrace passed) depends on scheduling; both free it.
	t.Logf("cancellation to the next call's answer on a one-worker pool: %v (workers killed: %d)", freed.Round(time.Millisecond), p.Stats().Killed)
	if freed > 5*time.Second {
		t.Fatalf("the worker was free again only %v after the cancellation", freed)
	}
}

// A call waiting for a worker whose caller goes away ends cancelled, and
// one whose deadline passes first ends busy.
func TestWaitingCallEnds(t *testing.T) {
	p := newTestPool(t, Options{Workers: 1, MaxWorkers: 1})
	m := compile(t, p, enginetest.Spec("wait_one", plugin.Limits{TimeoutMS: 3000}))
	hold, release := context.WithCancel(context.Background())
	defer release()
	held := make(chan error, 1)
	go func() { _, err := m.Call(hold, "loop", []byte(`{}`)); held <- err }()
	time.Sleep(200 * time.Millisecond)
	if st := p.EngineStats(); st.Running != 1 || st.Workers != 1 || st.Idle != 0 {
		t.Fatalf("stats while one call spins on a one-worker pool: %+v", st)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := m.Call(ctx, "echo", []byte(`{}`)); toolerr.CodeOf(err) != toolerr.CodeBusy {
		t.Fatalf("a call that waited past its deadline: %v, want busy", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel2)
	if _, err := m.Call(ctx2, "echo", []byte(`{}`)); toolerr.CodeOf(err) != toolerr.CodeCancelled {
		t.Fatalf("a waiting call whose caller went away: %v, want cancelled", err)
	}
	release()
	if err := <-held; toolerr.CodeOf(err) != toolerr.CodeCancelled {
		t.Fatalf("the spinning call, cancelled: %v", err)
	}
	if st := p.EngineStats(); st.Running != 0 || st.Waiting != 0 {
		t.Fatalf("stats after every call ended: %+v", st)
	}
}

// Loop-free code never sees a cancellation in-process: the worker running
// it is killed once it has not answered the cancel frame in time, and the
// call still ends cancelled at once.
func TestCancelStopsLoopFreeCode(t *testing.T) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "call_tree.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	p := newTestPool(t, Options{Workers: 2})
	m := compile(t, p, engine.Spec{Key: "call_tree", Name: "call_tree", Wasm: wasm, Exports: []string{"run"},
		Limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 30_000, MaxOutputBytes: 1024}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err = m.Call(ctx, "run", []byte(`{}`))
	if toolerr.CodeOf(err) != toolerr.CodeCancelled {
		t.Fatalf("cancelled call tree: %v, want cancelled", err)
	}
	if d := time.Since(start); d > 300*time.Millisecond+5*time.Second {
		t.Fatalf("the cancelled call tree ended after %v", d)
	}
	if k := p.Stats().Killed; k != 1 {
		t.Fatalf("%d workers killed, want the one running the call tree", k)
	}
}

// Cancellations that land at any moment of a round trip — before the
// request is written, while the worker runs it, as its reply arrives, just
// after — never reach the call after it on the same worker: each cancelled
// call answers cancelled or its result, and the next call always answers
// its own result (a cancel frame written late would cancel it instead).
func TestLateCancelNeverReachesTheNextCall(t *testing.T) {
	p := newTestPool(t, Options{Workers: 1, MaxWorkers: 1})
	m := compile(t, p, enginetest.Spec("late_cancel", plugin.Limits{TimeoutMS: 5000}))
	if _, err := m.Call(context.Background(), "echo", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		delay := time.Duration(i%40) * 10 * time.Microsecond
		timer := time.AfterFunc(delay, cancel)
		out, err := m.Call(ctx, "echo", []byte(`{"n":1}`))
		if err != nil && toolerr.CodeOf(err) != toolerr.CodeCancelled {
			t.Fatalf("call %d, cancelled after %v: %v, want its result or cancelled", i, delay, err)
		}
		if err == nil && string(out) != `{"n":1}` {
			t.Fatalf("call %d: %q", i, out)
		}
		timer.Stop()
		cancel()
		out, err = m.Call(context.Background(), "echo", []byte(`{"n":2}`))
		if err != nil || string(out) != `{"n":2}` {
			t.Fatalf("the call after call %d (cancelled after %v): %q, %v", i, delay, out, err)
		}
	}
	t.Logf("workers killed: %d", p.Stats().Killed)
}
