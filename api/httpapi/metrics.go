package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the API's own: requests by route and status, the plugin
// inventory, and the Go runtime. The call metrics (by tool, entry point
// and outcome) are the host pipeline's observer's (host/observe), in the
// same registry when the caller passes it as Options.Registry, so /metrics
// shows calls of every entry point.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
}

func newMetrics(b Backend, reg *prometheus.Registry) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhost_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
	}
	m.reg.MustRegister(m.requests,
		newInventory(b),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
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
