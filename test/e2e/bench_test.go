package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
)

// echoBundle writes an unsigned bundle of host/testdata/echo (a trivial
// WAT tool that returns its input) to dir/echo.plugin.
func echoBundle(tb testing.TB, dir string) string {
	tb.Helper()
	root, err := testplugins.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join(root, "host", "testdata", "echo", "echo.wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	manifest := []byte(`{"name": "echo", "version": "1.0.0", "description": "Trivial tool", "wasm": "echo.wasm",
 "tools": [{"name": "echo", "description": "Returns its arguments", "parameters": {"type": "object"}}],
 "limits": {"memory_pages": 17, "timeout_ms": 1000, "max_output_bytes": 4096}}`)
	b, err := plugin.NewBundle(manifest, wasm)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "echo.plugin")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkHTTPTrivialTool measures calls of a trivial tool through a real
// `toolhost serve` (HTTP, auth, schema validation, worker process, fresh
// instance per call) with 8 concurrent clients, and reports calls/s, p50
// and p99 latency.
func BenchmarkHTTPTrivialTool(b *testing.B) {
	w := newWorldB(b)
	bundle := echoBundle(b, w.dir)
	w.run("curator", "sign", "--key", filepath.Join(w.dir, "alice.key"), bundle)
	w.run("plugin", "install", bundle)
	s := w.serve("--max-in-flight", "256", "--max-in-flight-per-plugin", "256")

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	call := func() (time.Duration, error) {
		req, _ := http.NewRequest("POST", s.url+"/v1/tools/echo/call", strings.NewReader(`{"arguments":{"q":"ping"}}`))
		req.Header.Set("Authorization", "Bearer "+s.token)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return time.Since(start), nil
	}
	for range 50 { // warm up every worker
		if _, err := call(); err != nil {
			b.Fatal(err)
		}
	}
	const clients = 8
	lat := make([][]time.Duration, clients)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var failed sync.Once
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < b.N; i += clients {
				d, err := call()
				if err != nil {
					failed.Do(func() { b.Error(err) })
					return
				}
				lat[c] = append(lat[c], d)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}
