package worker

import (
	"sync"

	"github.com/toolhost/toolhost/host/toolerr"
)

// DefaultMemoryBudget is Options.MemoryBudgetBytes when it is 0: the
// resident memory every worker process of a pool may hold together.
//
// Chosen so that `toolhost serve` and its workers stay under 1 GiB (serve
// itself holds 35-60 MiB with a few plugins installed), while one request
// at a worker's own cap (768 MiB, a large compile) still fits beside
// three idle workers (22 MiB each, up to ~60 with a Go module loaded).
// RATIONALE.md, "One memory budget for all sandbox workers", has the
// measurements.
const DefaultMemoryBudget = 864 << 20

// budget is the pool-wide memory bound. Every request's memory check
// (watchdog.checkRSS, every rssEvery) records its worker's resident memory
// and sums the last records of every worker process the pool has (idle,
// busy, or killed and not yet gone). Only when that sum passes the budget
// does it read every worker's memory afresh (an idle worker's record is
// from its last request, whose memory may since have been freed) and, if
// the workers still hold more than the budget, stop the request in the
// largest of them: memory_limit, and the worker replaced as for its own
// cap. Never a small request while a larger one runs, and none while the
// excess is the memory of killed workers still being freed.
type budget struct {
	// mu serializes the decisions (enforce), so that two memory checks
	// that see the same excess do not stop two requests for it. It guards
	// nothing else: records are atomics on each proc.
	mu sync.Mutex
	// checked, when set (tests), is called after every decision that read
	// the workers afresh: what they used, and whether the pool acted on
	// an excess (stopped a request, or waits for a larger dying worker).
	checked func(used int64, acted bool)
}

// budgetExcess is what a request stopped for the pool's budget is told.
type budgetExcess struct {
	budget, used, own int64
}

// noteRSS records w's resident memory for the pool's budget, read by the
// memory check of the request wd runs, and enforces the budget when the
// records pass it.
func (wd *watchdog) noteRSS(rss int64) {
	p, w := wd.p, wd.w
	w.rss.Store(rss)
	w.running.Store(wd) // from its first memory check, the request may be stopped
	if p.recordedRSS() > p.opts.MemoryBudgetBytes {
		p.enforceBudget()
	}
}

// recordedRSS sums the last records of every worker process.
func (p *Pool) recordedRSS() int64 {
	p.procsMu.Lock()
	defer p.procsMu.Unlock()
	var sum int64
	for w := range p.procs {
		sum += w.rss.Load()
	}
	return sum
}

// enforceBudget reads every worker's resident memory and, if together they
// hold more than the budget, stops the request in the largest.
func (p *Pool) enforceBudget() {
	b := &p.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	p.procsMu.Lock()
	all := make([]*proc, 0, len(p.procs))
	for w := range p.procs {
		all = append(all, w)
	}
	p.procsMu.Unlock()

	var used, dying, largest int64
	var victim *watchdog
	for _, w := range all {
		rss := residentBytes(w.cmd.Process.Pid) // 0 once its memory is gone
		w.rss.Store(rss)
		used += rss
		if !w.alive() {
			dying += rss
			continue
		}
		if wd := w.running.Load(); wd != nil && rss > largest {
			victim, largest = wd, rss
		}
	}
	limit := p.opts.MemoryBudgetBytes
	if used <= limit {
		b.report(used, false)
		return
	}
	if victim == nil || used-dying <= limit {
		// Nothing to stop, or the excess is killed workers' memory on
		// its way out (releaseMemory): stopping another would not free it
		// sooner.
		b.report(used, dying > 0)
		return
	}
	victim.w.overBudget.Store(&budgetExcess{budget: limit, used: used, own: largest})
	if victim.kill(killPoolMemory) {
		p.budgetKilled.Add(1)
		p.notePeak(largest)
		p.log.Warn("the sandbox workers passed their memory budget; stopped the largest request",
			"budget_mib", limit>>20, "used_mib", used>>20, "stopped_mib", largest>>20)
	}
	b.report(used, true)
}

func (b *budget) report(used int64, acted bool) {
	if b.checked != nil {
		b.checked(used, acted)
	}
}

// budgetError is the error of a request stopped for the pool's budget.
func (p *Pool) budgetError(w *proc) error {
	e := w.overBudget.Load()
	if e == nil { // not expected: the excess is stored before the kill
		e = &budgetExcess{budget: p.opts.MemoryBudgetBytes}
	}
	return toolerr.Errorf(toolerr.CodeMemoryLimit,
		"the host's memory budget for all sandboxes (%d MiB) was reached: together they held %d MiB, %d MiB over, and this tool's sandbox was the largest (%d MiB); it was stopped. Retry when fewer tool calls run at once, or call the tool with less work",
		e.budget>>20, e.used>>20, mibCeil(e.used-e.budget), e.own>>20)
}

// mibCeil is n bytes in MiB, rounded up (an excess of a few KiB is 1 MiB,
// not 0).
func mibCeil(n int64) int64 { return (n + 1<<20 - 1) >> 20 }
