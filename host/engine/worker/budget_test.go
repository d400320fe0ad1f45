package worker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine/enginetest"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// freshRSS is what every worker process of p holds now.
func freshRSS(p *Pool) int64 {
	p.procsMu.Lock()
	defer p.procsMu.Unlock()
	var sum int64
	for w := range p.procs {
		sum += residentBytes(w.cmd.Process.Pid)
	}
	return sum
}

// Each worker stayed under its own cap (768 MiB), so concurrent calls that
// each fill their memory took the workers together as far as their number
// allowed: three calls of a plugin filling 256 MiB took serve and its
// workers to ~1 GiB, two such plugins to ~1.8 GiB. With a budget for all
// workers, passing it stops the call in the largest worker (memory_limit,
// saying so), never the small call that runs beside it, and no check that
// found the workers over the budget leaves them there.
func TestMemoryBudgetStopsTheLargestCall(t *testing.T) {
	const fill = 64 << 20 // each big call's memory
	p := newTestPool(t, Options{Workers: 4, MaxWorkers: 4})
	big := compile(t, p, enginetest.Spec("big", plugin.Limits{MemoryPages: fill >> 16, TimeoutMS: 5000}))
	small := compile(t, p, enginetest.Spec("small", plugin.Limits{TimeoutMS: 30000}))

	// Room for one big call and a half beside what the workers hold idle:
	// two full ones never fit. Set before any call runs (nothing reads it
	// yet).
	idle := freshRSS(p)
	budget := idle + fill*3/2
	p.opts.MemoryBudgetBytes = budget
	var mu sync.Mutex
	var over, unacted int
	p.budget.checked = func(used int64, acted bool) {
		mu.Lock()
		defer mu.Unlock()
		if used > budget {
			over++
			if !acted {
				unacted++
				t.Errorf("the workers held %d MiB, over the budget of %d MiB, and nothing was stopped", used>>20, budget>>20)
			}
		}
	}

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { _, errs[i] = big.Call(context.Background(), "fill", []byte(`{}`)) })
	}
	bigDone := make(chan struct{})
	go func() { wg.Wait(); close(bigDone) }()

	// A small call runs beside them all along: one that spins for a while
	// (so that it is running when the budget is checked) and one that uses
	// a little memory.
	smallCalls := 0
	for done := false; !done; {
		for _, export := range []string{"busy", "fill_mib"} {
			out, err := small.Call(context.Background(), export, []byte(`{}`))
			if err != nil || string(out) != "ok" {
				t.Fatalf("small call %s beside the big ones: %q, %v", export, out, err)
			}
			smallCalls++
		}
		select {
		case <-bigDone:
			done = true
		default:
		}
	}

	stopped := 0
	for i, err := range errs {
		switch toolerr.CodeOf(err) {
		case toolerr.CodeMemoryLimit:
			msg := toolerr.As(err).Message
			for _, want := range []string{"memory budget for all sandboxes", "MiB over", "was the largest", "Retry when fewer"} {
				if !strings.Contains(msg, want) {
					t.Errorf("big call %d: message %q lacks %q", i, msg, want)
				}
			}
			stopped++
		case toolerr.CodeTimeout: // the one that fitted, stopped at its deadline
		default:
			t.Errorf("big call %d: %v, want memory_limit (stopped for the budget) or timeout", i, err)
		}
	}
	st := p.Stats()
	t.Logf("idle workers %d MiB, budget %d MiB; %d of 3 big calls stopped for the budget, %d checks over it, %d small calls beside them; %+v",
		idle>>20, budget>>20, stopped, over, smallCalls, st)
	if stopped < 2 {
		t.Errorf("%d big calls stopped for the budget, want at least 2 (two full ones never fit)", stopped)
	}
	if st.BudgetKilled != uint64(stopped) {
		t.Errorf("Stats.BudgetKilled = %d, want %d", st.BudgetKilled, stopped)
	}
	// Once the killed workers are gone, the pool holds less than the budget.
	for end := time.Now().Add(10 * time.Second); freshRSS(p) > budget; {
		if time.Now().After(end) {
			t.Fatalf("the workers still hold %d MiB after the calls, over the budget of %d MiB", freshRSS(p)>>20, budget>>20)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
