package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/toolhost/toolhost/host/toolerr"
)

// unknownTool is the tool label of calls to names that are not installed:
// request paths are caller-chosen, and a label per guessed name would let
// any client grow the metric set without bound. Tool names start with a
// letter, so it never collides with a real tool.
const unknownTool = "_unknown"

// metrics live in the API's own registry, never the global one, so that two
// servers in one process (tests, embedding) do not collide and nothing
// registered by a dependency leaks into /metrics.
type metrics struct {
	reg       *prometheus.Registry
	calls     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	limitHits *prometheus.CounterVec
	busy      *prometheus.CounterVec
	inFlight  prometheus.Gauge
	requests  *prometheus.CounterVec
}

func newMetrics(b Backend) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhost_tool_calls_total",
			Help: `Tool calls by tool and outcome ("ok" or the error code), over HTTP and MCP.`,
		}, []string{"tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "toolhost_tool_call_duration_seconds",
			Help: "Wall time of tool calls that were admitted, by tool, whatever their outcome.",
			// 0.5 ms to ~65 s: from a warm trivial call to the 60 s maximum deadline.
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"tool"}),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhost_tool_limit_hits_total",
			Help: "Calls ended by a sandbox limit (timeout, memory_limit, output_too_large), by tool.",
		}, []string{"tool", "limit"}),
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhost_busy_rejections_total",
			Help: `Calls refused with "busy" because the in-flight limit was reached, by scope ("server" or "plugin").`,
		}, []string{"scope"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolhost_tool_calls_in_flight",
			Help: "Tool calls running now.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhost_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.limitHits, m.busy, m.inFlight, m.requests,
		newInventory(b),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// observe records one finished call.
func (m *metrics) observe(tool string, code toolerr.Code, seconds float64, admitted bool) {
	outcome := "ok"
	if code != "" {
		outcome = string(code)
	}
	m.calls.WithLabelValues(tool, outcome).Inc()
	if admitted {
		m.duration.WithLabelValues(tool).Observe(seconds)
	}
	switch code {
	case toolerr.CodeTimeout, toolerr.CodeMemoryLimit, toolerr.CodeOutputTooLarge:
		m.limitHits.WithLabelValues(tool, string(code)).Inc()
	}
}

// pluginStates are always exported, zero or not, so that alerts on e.g.
// quarantined plugins have a series to watch.
var pluginStates = []string{"verified", "unavailable", "quarantined", "dev-unsigned"}

// inventory reports installed plugins and available tools at scrape time,
// from the backend itself, so it can never drift from what is served.
type inventory struct {
	b       Backend
	plugins *prometheus.Desc
	tools   *prometheus.Desc
}

func newInventory(b Backend) *inventory {
	return &inventory{
		b:       b,
		plugins: prometheus.NewDesc("toolhost_plugins_installed", "Installed plugins by verification state.", []string{"state"}, nil),
		tools:   prometheus.NewDesc("toolhost_tools_available", "Tools that can be called now.", nil, nil),
	}
}

func (c *inventory) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.plugins
	ch <- c.tools
}

func (c *inventory) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{}
	for _, p := range c.b.Plugins() {
		counts[p.State]++
	}
	for _, s := range pluginStates {
		ch <- prometheus.MustNewConstMetric(c.plugins, prometheus.GaugeValue, float64(counts[s]), s)
		delete(counts, s)
	}
	for s, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.plugins, prometheus.GaugeValue, float64(n), s)
	}
	ch <- prometheus.MustNewConstMetric(c.tools, prometheus.GaugeValue, float64(len(c.b.Tools())))
}
