package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/store"
)

type benchOptions struct {
	args        string
	concurrency int
	duration    time.Duration
}

func newBenchCmd(g *globalOptions) *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench TOOL",
		Short: "Load-test an installed tool: latency percentiles, calls/s, errors",
		Long: `Call TOOL with the same arguments from N concurrent callers for a while
and report calls/s, the p50/p90/p99 latency of a call and how many failed.

Calls go through the running toolhost serve of this home (over its control
socket) when there is one; otherwise through a host started here with the
worker pool toolhost serve would start. Every call is a full call: argument
validation, the sandbox (a fresh instance unless the plugin opted into
reuse), and the output checks. Ctrl-C prints what was measured so far and
exits 130 (interrupted); a running serve that stops answering ends the run
the same way, exit 1.`,
		Example: "  toolhost bench get_current_time --args '{\"timezone\":\"Europe/Paris\"}' -c 4 -d 10s",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Its calls are the CLI's, in a host opened here as through
			// a running serve (unlabelled, a call counts as the Go API's).
			return g.bench(host.WithEntry(cmd.Context(), host.EntryCLI), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.args, "args", "{}", "the arguments of every call (a JSON object)")
	f.IntVarP(&o.concurrency, "concurrency", "c", 4, "concurrent callers (1-256)")
	f.DurationVarP(&o.duration, "duration", "d", 5*time.Second, "how long to keep calling (up to 10m); every caller finishes at least one call, however short this is")
	return cmd
}

// benchResult is what one load test measured.
type benchResult struct {
	calls, errors int
	elapsed       time.Duration
	latencies     []time.Duration // of the calls that succeeded, sorted
	firstErr      error
	// lost is the error of a call the host did not answer at all (the
	// running serve stopped, its socket went away): the run stops there,
	// and that call is not counted.
	lost error
}

func (g *globalOptions) bench(ctx context.Context, tool string, o benchOptions) error {
	if o.concurrency < 1 || o.concurrency > 256 {
		return usagef("-c %d: use 1 to 256 concurrent callers", o.concurrency)
	}
	if o.duration <= 0 || o.duration > 10*time.Minute {
		return usagef("-d %s: use a duration above 0 and up to 10m, such as 5s", o.duration)
	}
	if !json.Valid([]byte(o.args)) {
		return usagef("--args is not valid JSON: pass a JSON object such as '{\"timezone\":\"UTC\"}'")
	}
	if g.workers <= 0 {
		// Without a running server, the pool toolhost serve would start.
		g.workers = max(3, 2*runtime.NumCPU())
	}
	api, closeAPI, err := g.openAPI(ctx)
	if err != nil {
		return err
	}
	defer closeAPI()
	// A tool whose every call waits for a person cannot be measured: each
	// caller would sit in the approval queue (silently, or until the
	// approval timeout denies it) instead of calling.
	if gov, ok := api.(control.Governance); ok {
		if v, err := gov.Policy(ctx); err == nil {
			for _, e := range v.Tools {
				if e.Tool == tool && e.Action == store.PolicyAsk {
					return fmt.Errorf("%s needs a person's approval for every call (policy %s, %s), so bench would measure people, not the tool: benchmark it in a home where its policy is allow", tool, e.Action, e.Source)
				}
			}
		}
	}
	// One call first: a tool that does not exist or whose arguments are
	// refused fails here with its own error, not as N errors.
	if _, err := api.Call(ctx, tool, []byte(o.args)); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("bench was interrupted before any call finished: nothing was measured (%w)", ctx.Err())
		}
		return err
	}
	where := "a host started for this run"
	if _, remote := api.(*control.Client); remote {
		where = "the running toolhost serve"
	}
	fmt.Fprintf(g.stderr, "benchmarking %s for %s with %d callers through %s…\n", tool, o.duration, o.concurrency, where)
	r := runBench(ctx, api, tool, []byte(o.args), o)
	printBench(g, tool, o, r)
	switch {
	case ctx.Err() != nil:
		// Ctrl-C or SIGTERM: what was measured is printed, but a script
		// must not take it for the run it asked for (exit 130).
		if r.calls == 0 {
			return fmt.Errorf("bench was interrupted before any call finished: nothing was measured (%w)", ctx.Err())
		}
		return fmt.Errorf("bench was interrupted after %s of its %s: the figures above cover only that part (%w)",
			r.elapsed.Round(time.Millisecond), o.duration, ctx.Err())
	case r.lost != nil:
		return fmt.Errorf("bench stopped after %s of its %s because the host stopped answering; the figures above cover only the calls before: %w",
			r.elapsed.Round(time.Millisecond), o.duration, r.lost)
	case r.calls == r.errors:
		return fmt.Errorf("every call failed: %w", r.firstErr)
	}
	return nil
}

// runBench calls tool from o.concurrency goroutines until o.duration
// passes or ctx ends. Every caller finishes at least one call, even when
// that call outlasts o.duration (which is then what the run reports): a
// -d shorter than one call measures one call per caller rather than
// nothing. A call that gets no answer from the host at all (no tool error
// code: the running serve went away) ends the run for every caller: it
// says nothing about the tool, and counting it would report thousands of
// failed connections a second as calls.
func runBench(ctx context.Context, api control.API, tool string, args []byte, o benchOptions) benchResult {
	run, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var (
		mu sync.Mutex
		r  benchResult
		wg sync.WaitGroup
	)
	start := time.Now()
	for range o.concurrency {
		wg.Go(func() {
			var lat []time.Duration
			var errs int
			var first error
			for n := 0; n == 0 || run.Err() == nil; n++ {
				callCtx := run
				if n == 0 {
					callCtx = ctx // the first call is not cut short by -d
				}
				t0 := time.Now()
				_, err := api.Call(callCtx, tool, args)
				d := time.Since(t0)
				if err != nil {
					if callCtx.Err() != nil {
						break // cut short by the end of the run, not a failure
					}
					if toolerr.CodeOf(err) == "" {
						mu.Lock()
						if r.lost == nil {
							r.lost = err
						}
						mu.Unlock()
						cancel()
						break
					}
					errs++
					if first == nil {
						first = err
					}
					continue
				}
				lat = append(lat, d)
			}
			mu.Lock()
			r.latencies = append(r.latencies, lat...)
			r.calls += len(lat) + errs
			r.errors += errs
			if r.firstErr == nil {
				r.firstErr = first
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	slices.Sort(r.latencies)
	return r
}

func printBench(g *globalOptions, tool string, o benchOptions, r benchResult) {
	w := g.stdout
	fmt.Fprintf(w, "tool        %s\n", tool)
	fmt.Fprintf(w, "callers     %d\n", o.concurrency)
	fmt.Fprintf(w, "duration    %s\n", r.elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "calls       %d\n", r.calls)
	fmt.Fprintf(w, "calls/s     %.1f\n", float64(r.calls)/r.elapsed.Seconds())
	for _, p := range []struct {
		name string
		q    int
	}{{"p50", 50}, {"p90", 90}, {"p99", 99}} {
		fmt.Fprintf(w, "%-11s %s\n", p.name, percentile(r.latencies, p.q))
	}
	fmt.Fprintf(w, "errors      %d\n", r.errors)
	if r.firstErr != nil {
		fmt.Fprintf(w, "first error %v\n", r.firstErr)
	}
}

// percentile returns the q-th percentile of sorted latencies, or "-".
func percentile(sorted []time.Duration, q int) string {
	if len(sorted) == 0 {
		return "-"
	}
	d := sorted[min(len(sorted)-1, len(sorted)*q/100)]
	return fmt.Sprintf("%.3f ms", float64(d.Nanoseconds())/1e6)
}
