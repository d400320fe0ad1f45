package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// gate stands in front of the backend for every call, over HTTP and MCP
// alike: it admits or refuses the call (bounded in-flight work, overall and
// per plugin, never a queue), records metrics and writes the call's log
// line. It implements Backend, so the MCP server is built on it.
type gate struct {
	b         Backend
	m         *metrics
	log       *slog.Logger
	maxAll    int
	maxPlugin int
	logArgs   bool

	mu        sync.Mutex
	inFlight  int
	perPlugin map[string]int

	idxMu sync.Mutex
	idx   atomic.Pointer[toolIndex]
}

// toolIndex maps tool names to their plugin, valid until changed closes.
type toolIndex struct {
	changed <-chan struct{}
	tools   map[string]toolMeta
}

type toolMeta struct {
	plugin string
	digest string // short hex prefix, for logs
}

func newGate(b Backend, m *metrics, log *slog.Logger, maxAll, maxPlugin int) *gate {
	return &gate{b: b, m: m, log: log, maxAll: maxAll, maxPlugin: maxPlugin, perPlugin: map[string]int{}}
}

func (g *gate) Tools() []host.ToolInfo      { return g.b.Tools() }
func (g *gate) Plugins() []host.PluginInfo  { return g.b.Plugins() }
func (g *gate) Changed() <-chan struct{}    { return g.b.Changed() }
func (g *gate) lookup(tool string) toolMeta { return g.index().tools[tool] }

type apiKey struct{}

// withAPI labels a call's log line with the API it came through.
func withAPI(ctx context.Context, api string) context.Context {
	return context.WithValue(ctx, apiKey{}, api)
}

// Call admits, runs, measures and logs one call. Argument values are not
// logged unless the operator asked for it (Options.LogArguments): they
// are the user's data, and error messages about them (from the schema
// validator) may quote them, so only the code is logged.
func (g *gate) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	meta := g.lookup(tool)
	api, _ := ctx.Value(apiKey{}).(string)
	if api == "" {
		api = "mcp"
	}
	release, busy := g.admit(meta.plugin)
	if busy != nil {
		g.m.observe(g.label(tool, meta, busy.Code), busy.Code, 0, false)
		g.logCall(ctx, api, tool, meta, 0, busy.Code, args)
		return nil, busy
	}
	start := time.Now()
	res, err := g.b.Call(ctx, tool, args)
	elapsed := time.Since(start)
	release()
	var code toolerr.Code
	if err != nil {
		he := asError(err)
		code, err = he.Code, he
	}
	g.m.observe(g.label(tool, meta, code), code, elapsed.Seconds(), true)
	g.logCall(ctx, api, tool, meta, elapsed, code, args)
	return res, err
}

func (g *gate) label(tool string, meta toolMeta, code toolerr.Code) string {
	if meta.plugin == "" && (code == toolerr.CodeToolNotFound || code == toolerr.CodeBusy) {
		return unknownTool
	}
	return tool
}

func (g *gate) logCall(ctx context.Context, api, tool string, meta toolMeta, elapsed time.Duration, code toolerr.Code, args []byte) {
	level, outcome := slog.LevelInfo, "ok"
	if code != "" {
		outcome = string(code)
		if code == toolerr.CodeInternal {
			level = slog.LevelError
		}
	}
	attrs := []slog.Attr{
		slog.String("api", api),
		slog.String("tool", tool),
		slog.String("plugin", meta.plugin),
		slog.String("digest", meta.digest),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.String("outcome", outcome),
	}
	if g.logArgs {
		const max = 4096
		a := string(args)
		if len(a) > max {
			a = a[:max] + "…"
		}
		attrs = append(attrs, slog.String("arguments", a))
	}
	g.log.LogAttrs(ctx, level, "tool call", attrs...)
}

// admit takes a slot overall and one for the plugin, or refuses at once.
func (g *gate) admit(plugin string) (release func(), busy *toolerr.Error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight >= g.maxAll {
		g.m.busy.WithLabelValues("server").Inc()
		return nil, toolerr.Errorf(toolerr.CodeBusy, "toolhost is already running %d tool calls, its limit; retry in a second", g.maxAll)
	}
	if plugin != "" && g.perPlugin[plugin] >= g.maxPlugin {
		g.m.busy.WithLabelValues("plugin").Inc()
		return nil, toolerr.Errorf(toolerr.CodeBusy, "plugin %s is already running %d calls, its limit; retry in a second", plugin, g.maxPlugin)
	}
	g.inFlight++
	g.perPlugin[plugin]++
	g.m.inFlight.Inc()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.inFlight--
		if g.perPlugin[plugin]--; g.perPlugin[plugin] == 0 {
			delete(g.perPlugin, plugin)
		}
		g.m.inFlight.Dec()
	}, nil
}

// waitIdle returns when no call is running, or with ctx's error.
func (g *gate) waitIdle(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		g.mu.Lock()
		n := g.inFlight
		g.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// index returns the tool→plugin map, rebuilt after each change of the
// backend's tool set rather than per call.
func (g *gate) index() *toolIndex {
	if idx := g.idx.Load(); idx != nil && !closed(idx.changed) {
		return idx
	}
	g.idxMu.Lock()
	defer g.idxMu.Unlock()
	if idx := g.idx.Load(); idx != nil && !closed(idx.changed) {
		return idx
	}
	changed := g.b.Changed()
	digests := map[string]string{}
	for _, p := range g.b.Plugins() {
		digests[p.Name] = p.Digest.Short()
	}
	tools := g.b.Tools()
	idx := &toolIndex{changed: changed, tools: make(map[string]toolMeta, len(tools))}
	for _, t := range tools {
		idx.tools[t.Name] = toolMeta{plugin: t.Plugin, digest: digests[t.Plugin]}
	}
	g.idx.Store(idx)
	return idx
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
