package observe

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// UnknownTool is the tool label of calls to names that are not installed:
// tool names are caller-chosen, and a label per guessed name would let any
// client grow the metric set without bound. Tool names start with a
// letter, so it never collides with a real tool.
const UnknownTool = "_unknown"

// Loader reports the host's admission state (*host.Host is one).
type Loader interface{ Load() host.Load }

// Metrics counts calls into a Prometheus registry of its own (never the
// global one: two hosts in one process must not collide, and nothing a
// dependency registers leaks into /metrics). It is a host.CallObserver.
type Metrics struct {
	reg       *prometheus.Registry
	calls     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	queued    *prometheus.HistogramVec
	limitHits *prometheus.CounterVec
}

var _ host.CallObserver = (*Metrics)(nil)

// NewMetrics registers the call metrics in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhost_tool_calls_total",
			Help: `Tool calls by tool, entry point (http, mcp-http, mcp-stdio, cli, go) and outcome ("ok" or the error code, "cancelled" included).`,
		}, []string{"tool", "entry", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "toolhost_tool_call_duration_seconds",
			Help: "Wall time of tool calls from arrival to answer, by tool, whatever their outcome.",
			// 0.5 ms to ~65 s: from a warm trivial call to the 60 s maximum deadline.
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"tool"}),
		queued: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolhost_tool_call_queue_seconds",
			Help:    "Time tool calls waited for admission, by tool.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"tool"}),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhost_tool_limit_hits_total",
			Help: "Calls ended by a sandbox limit (timeout, memory_limit, output_too_large), by tool.",
		}, []string{"tool", "limit"}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.queued, m.limitHits)
	return m
}

// TrackLoad adds gauges of l's admission state (the host's, once it
// exists: the host takes its observers when it is made). Call it once.
func (m *Metrics) TrackLoad(l Loader) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "toolhost_tool_calls_in_flight",
			Help: "Tool calls admitted and not yet answered, over every entry point.",
		}, func() float64 { return float64(l.Load().Running) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "toolhost_tool_calls_queued",
			Help: "Tool calls waiting for admission.",
		}, func() float64 { return float64(l.Load().Queued) }),
	)
}

// Registry is where the metrics live; the HTTP API serves it at /metrics
// and adds its own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveCall implements host.CallObserver.
func (m *Metrics) ObserveCall(_ context.Context, r host.CallRecord) {
	tool := r.Tool
	if r.Plugin == "" {
		tool = UnknownTool
	}
	outcome := "ok"
	if r.Outcome != "" {
		outcome = string(r.Outcome)
	}
	m.calls.WithLabelValues(tool, string(r.Entry), outcome).Inc()
	if r.Plugin != "" {
		m.duration.WithLabelValues(tool).Observe(r.Duration.Seconds())
		m.queued.WithLabelValues(tool).Observe(r.Queued.Seconds())
	}
	switch r.Outcome {
	case toolerr.CodeTimeout, toolerr.CodeMemoryLimit, toolerr.CodeOutputTooLarge:
		m.limitHits.WithLabelValues(tool, string(r.Outcome)).Inc()
	}
}
