package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/observe"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// timeBundle is built by `make plugins`.
var timeBundle = filepath.Join("..", "..", "build", "plugins", "time.plugin")

// newRealHost opens a host over a fresh store with the time plugin
// installed. The plugin is unsigned, so the host runs in its dev mode;
// trust is the host's business and tested there.
func newRealHost(t testing.TB) *host.Host {
	t.Helper()
	return newRealHostWith(t, host.Options{})
}

// newRealHostWith is newRealHost with more options (Store and Engine are
// set here).
func newRealHostWith(t testing.TB, opts host.Options) *host.Host {
	t.Helper()
	return newHostWith(t, opts, readBundle(t, timeBundle))
}

// readBundle reads a bundle built by `make plugins`, skipping the test
// when it has not been built.
func readBundle(t testing.TB, path string) *plugin.Bundle {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no plugin bundle (run `make plugins`): %v", err)
	}
	bundle, err := plugin.DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	return bundle
}

// newHostWith opens a host (in-process engine, dev mode, more options in
// opts) over a fresh store with the bundles installed.
func newHostWith(t testing.TB, opts host.Options, bundles ...*plugin.Bundle) *host.Host {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := sandbox.NewInProcess(testplugins.CacheDir(t))
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	opts.Store, opts.Engine, opts.AllowUnsigned = st, engine, true
	h, err := host.New(opts)
	if err != nil {
		engine.Close(context.Background())
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		engine.Close(context.Background())
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	for _, b := range bundles {
		if _, err := h.Install(context.Background(), b, host.InstallOptions{}); err != nil {
			t.Fatalf("install: %v", err)
		}
	}
	return h
}

func TestRealHostTimePlugin(t *testing.T) {
	metrics := observe.NewMetrics()
	h := newRealHostWith(t, host.Options{Observers: []host.CallObserver{metrics}})
	_, srv := serve(t, h, Options{Registry: metrics.Registry()})
	notified := make(chan struct{}, 16)
	cs := connectMCP(t, srv, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		notified <- struct{}{}
	}})
	ctx := context.Background()

	tools := decode[struct{ Tools []host.ToolInfo }](t, do(t, srv, "GET", "/v1/tools", "", "").body).Tools
	if len(tools) != 2 || tools[0].Name != "convert_time" || tools[1].Name != "get_current_time" || tools[1].Plugin != "time" {
		t.Fatalf("tools = %+v", tools)
	}

	r := do(t, srv, "POST", "/v1/tools/get_current_time/call", `{"arguments":{"timezone":"Asia/Tokyo"}}`, "")
	if r.status != 200 {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	var got struct {
		Result struct {
			Timezone  string `json:"timezone"`
			UTCOffset string `json:"utc_offset"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || got.Result.Timezone != "Asia/Tokyo" || got.Result.UTCOffset != "+09:00" {
		t.Errorf("result = %s", r.body)
	}
	if r := do(t, srv, "POST", "/v1/tools/get_current_time/call", `{"arguments":{"timezone":"Mars/Base"}}`, ""); r.status != 422 || r.errorCode() != "plugin_error" {
		t.Errorf("plugin error: %d %s", r.status, r.body)
	}

	for _, body := range []string{`{"arguments":{"timezone":5}}`, `{"arguments":{"zone":"UTC"}}`, `{"arguments":{"timezone":""}}`} {
		if r := do(t, srv, "POST", "/v1/tools/get_current_time/call", body, ""); r.status != 400 || r.errorCode() != "invalid_arguments" {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
	if r := do(t, srv, "POST", "/v1/tools/convert_time/call", `{}`, ""); r.status != 400 || r.errorCode() != "invalid_arguments" {
		t.Errorf("missing required: %d %s", r.status, r.body)
	}

	res, err := cs.CallTool(ctx, mcpCall("get_current_time", map[string]any{"timezone": "UTC"}))
	if err != nil || res.IsError || res.StructuredContent == nil {
		t.Errorf("MCP call: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, mcpCall("get_current_time", map[string]any{"timezone": 5}))
	if err != nil || !res.IsError || !strings.HasPrefix(textOf(res), "invalid_arguments: ") {
		t.Errorf("MCP bad arguments: %v %+v", err, res)
	}

	m := string(do(t, srv, "GET", "/metrics", "", "").body)
	mustContain(t, m,
		`toolhost_tool_calls_total{entry="http",outcome="ok",tool="get_current_time"} 1`,
		`toolhost_tool_calls_total{entry="mcp-http",outcome="ok",tool="get_current_time"} 1`,
		`toolhost_tool_calls_total{entry="http",outcome="invalid_arguments",tool="get_current_time"} 3`,
		`toolhost_tool_calls_total{entry="mcp-http",outcome="invalid_arguments",tool="get_current_time"} 1`,
		`toolhost_plugins_installed{state="dev-unsigned"} 1`,
		`toolhost_tools_available 2`,
	)

	// Removed while serving: MCP clients are told, HTTP stops listing it.
	if err := h.Remove("time"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-notified:
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed after remove")
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 0 {
		t.Errorf("MCP tools after remove: %v %v", mcpNames(list.Tools), err)
	}
	if r := do(t, srv, "GET", "/v1/tools", "", ""); string(r.body) != `{"tools":[]}`+"\n" {
		t.Errorf("tools after remove: %s", r.body)
	}
	if r := do(t, srv, "POST", "/v1/tools/get_current_time/call", `{}`, ""); r.status != 404 || r.errorCode() != "tool_not_found" {
		t.Errorf("call after remove: %d %s", r.status, r.body)
	}
}

// BenchmarkHTTPCall measures a trivial tool over the HTTP API end to end
// (loopback TCP, auth, admission, argument validation, sandbox call),
// reporting latency percentiles next to ns/op.
func BenchmarkHTTPCall(b *testing.B) {
	h := newRealHost(b)
	api, err := New(h, Options{Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	srv := httptest.NewServer(api)
	defer srv.Close()
	client := srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	url := srv.URL + "/v1/tools/get_current_time/call"
	body := []byte(`{"arguments":{"timezone":"UTC"}}`)

	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mine = append(mine, time.Since(t0))
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
