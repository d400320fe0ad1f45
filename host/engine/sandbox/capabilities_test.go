package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
)

// The capability tests compile the fs and fetch samples and the capprobe
// module many times, each with different grants (a temp dir, a private
// network grant). One engine with an in-memory compilation cache serves the
// whole test binary, so each wasm is compiled by wazero once and every later
// Compile of the same bytes is a cache hit.
var (
	capEngineOnce sync.Once
	capEngineVal  *InProcess
	capEngineErr  error
)

func capEngine(t *testing.T) *InProcess {
	t.Helper()
	capEngineOnce.Do(func() { capEngineVal, capEngineErr = NewInProcess("") })
	if capEngineErr != nil {
		t.Fatal(capEngineErr)
	}
	return capEngineVal
}

// samplePlugin is a sample's manifest bytes and wasm, read once per test binary.
type samplePlugin struct {
	manifest []byte
	wasm     []byte
}

var (
	samplesMu sync.Mutex
	samples   = map[string]samplePlugin{}
)

func loadSample(t *testing.T, name string) samplePlugin {
	t.Helper()
	samplesMu.Lock()
	defer samplesMu.Unlock()
	if s, ok := samples[name]; ok {
		return s
	}
	dir := testplugins.Dir(t, name)
	var s samplePlugin
	var err error
	if s.manifest, err = os.ReadFile(filepath.Join(dir, "plugin.json")); err != nil {
		t.Fatal(err)
	}
	if s.wasm, err = os.ReadFile(filepath.Join(dir, "plugin.wasm")); err != nil {
		t.Fatal(err)
	}
	samples[name] = s
	return s
}

// specOf parses manifest (strictly, as the host does) into a Spec for wasm.
func specOf(t *testing.T, manifest, wasm []byte) engine.Spec {
	t.Helper()
	m, err := plugin.ParseManifest(manifest)
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	var exports []string
	for _, tool := range m.Tools {
		exports = append(exports, tool.Export)
	}
	return engine.Spec{
		Key: m.Name, Name: m.Name, Wasm: wasm, Limits: m.Limits.Effective(), Permissions: m.Permissions, Exports: exports,
	}
}

// compileManifest compiles wasm under manifest.
func compileManifest(t *testing.T, manifest, wasm []byte, allowPrivate bool) engine.Module {
	t.Helper()
	spec := specOf(t, manifest, wasm)
	spec.AllowPrivateNetwork = allowPrivate
	mod, err := capEngine(t).Compile(context.Background(), spec)
	if err != nil {
		t.Fatalf("compile %s: %v", spec.Name, err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	return mod
}

// replaceOnce replaces old, which must occur exactly once, in the sample's
// manifest: the test fails loudly if the sample's plugin.json changes shape.
func replaceOnce(t *testing.T, manifest []byte, old, new string) []byte {
	t.Helper()
	if n := bytes.Count(manifest, []byte(old)); n != 1 {
		t.Fatalf("manifest holds %q %d times, want once", old, n)
	}
	return bytes.Replace(manifest, []byte(old), []byte(new), 1)
}

// call runs export with args and returns its output or *Error.
func call(t *testing.T, m engine.Module, export string, args any) ([]byte, *toolerr.Error) {
	t.Helper()
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Call(context.Background(), export, in)
	if err == nil {
		return out, nil
	}
	var se *toolerr.Error
	if !errors.As(err, &se) {
		t.Fatalf("%s: error %v (%T) is not a *toolerr.Error", export, err, err)
	}
	return nil, se
}

func mustFail(t *testing.T, m engine.Module, export string, args any, code toolerr.Code, msgPart string) *toolerr.Error {
	t.Helper()
	out, e := call(t, m, export, args)
	if e == nil {
		t.Fatalf("%s(%v) succeeded with %s, want %s error", export, args, out, code)
	}
	if e.Code != code || !strings.Contains(e.Message, msgPart) {
		t.Fatalf("%s(%v) = %v, want code %s with %q in the message", export, args, e, code, msgPart)
	}
	return e
}

// --- capprobe: raw calls of toolhost.http_fetch with hostile offsets ---

var (
	probeOnce sync.Once
	probeWasm []byte
	probeErr  error
)

// probeExports are every export of testdata/capprobe.wat.
var probeExports = []string{
	"open_dotdot", "open_dotdot_deep", "open_absolute", "open_symlink_escape", "create_file",
	"write_existing", "truncate_existing", "unlink", "mkdir", "rename", "symlink",
	"fetch_offset_zero", "fetch_offset_max", "fetch_offset_wraps", "fetch_offset_inside",
	"fetch_offset_random", "fetch_not_json", "fetch_many", "fetch_forbidden_then_fail",
}

// compileProbe compiles testdata/capprobe.wasm with a grant of dir at
// /data (none if dir is empty) and allowed_hosts ["example.com"].
func compileProbe(t *testing.T, dir string) engine.Module {
	t.Helper()
	probeOnce.Do(func() { probeWasm, probeErr = os.ReadFile(filepath.Join("testdata", "capprobe.wasm")) })
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	perms := plugin.Permissions{AllowedHosts: []string{"example.com"}}
	if dir != "" {
		perms.AllowedPaths = map[string]string{dir: "/data"}
	}
	spec := engine.Spec{
		Key: "capprobe", Name: "capprobe", Wasm: probeWasm, Exports: probeExports, Permissions: perms,
		Limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 5000, MaxOutputBytes: 1 << 20},
	}
	mod, err := capEngine(t).Compile(context.Background(), spec)
	if err != nil {
		t.Fatalf("compile capprobe: %v", err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	return mod
}

func TestHTTPFetchBadOffsets(t *testing.T) {
	mod := compileProbe(t, "")
	for _, tc := range []struct{ export, want string }{
		{"fetch_offset_zero", "does not point at an Extism memory block"},
		{"fetch_offset_max", "does not point at an Extism memory block"},
		{"fetch_offset_wraps", "does not point at an Extism memory block"},
		{"fetch_offset_inside", "does not point at an Extism memory block"},
		{"fetch_offset_random", "does not point at an Extism memory block"},
		{"fetch_not_json", "bad request: invalid character"},
	} {
		t.Run(tc.export, func(t *testing.T) {
			out, e := call(t, mod, tc.export, nil)
			if e != nil {
				t.Fatalf("call failed: %v", e)
			}
			var resp fetchResponse
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("answer %q is not JSON: %v", out, err)
			}
			if !strings.Contains(resp.Error, tc.want) {
				t.Fatalf("answer %+v, want an error with %q", resp, tc.want)
			}
		})
	}
}

func TestHTTPFetchRequestBudget(t *testing.T) {
	mod := compileProbe(t, "")
	out, e := call(t, mod, "fetch_many", nil)
	if e != nil {
		t.Fatalf("call failed: %v", e)
	}
	var resp fetchResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("at most %d", MaxFetchesPerCall); !strings.Contains(resp.Error, want) {
		t.Fatalf("100th answer %+v, want %q", resp, want)
	}
	// The budget is per call: the next call starts again.
	mustFail(t, mod, "fetch_forbidden_then_fail", nil, toolerr.CodePermissionDenied, `host "forbidden.invalid" is not in the plugin's allowed_hosts`)
}

func TestHTTPFetchDenialSetsCode(t *testing.T) {
	mod := compileProbe(t, "")
	mustFail(t, mod, "fetch_forbidden_then_fail", nil, toolerr.CodePermissionDenied, `host "forbidden.invalid" is not in`)
}

// --- the fetch sample against a local server ---

// fetchManifest is the fetch sample's manifest with allowed_hosts replaced.
func fetchManifest(t *testing.T, hosts ...string) []byte {
	t.Helper()
	s := loadSample(t, "fetch")
	list, _ := json.Marshal(hosts)
	m := replaceOnce(t, s.manifest, `"allowed_hosts": ["example.com", "*.example.com"]`, `"allowed_hosts": `+string(list))
	// The sample's secret must stay within allowed_hosts: bind it to the
	// first host.
	return replaceOnce(t, m, `"hosts": ["api.example.com"]`, `"hosts": ["`+hosts[0]+`"]`)
}

// localURL rewrites an httptest URL (http://127.0.0.1:PORT) to use a host name.
func localURL(srv *httptest.Server, host, path string) string {
	return strings.Replace(srv.URL, "127.0.0.1", host, 1) + path
}

type fetchOut struct {
	Status       int    `json:"status"`
	URL          string `json:"url"`
	ContentType  string `json:"content_type"`
	Body         string `json:"body"`
	BodyEncoding string `json:"body_encoding"`
	Truncated    bool   `json:"truncated"`
}

func TestFetchSample(t *testing.T) {
	t.Parallel() // compiling a Go guest takes seconds: overlap the two samples
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "hello %s %s", r.Method, r.Header.Get("X-Probe"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("a"), 1<<20))
	})
	mux.HandleFunc("/to-forbidden", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://forbidden.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/to-loopback-ip", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/hello", http.StatusFound) // http://127.0.0.1:PORT
	})
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/to-ipv6-loopback", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://[::1]/", http.StatusFound)
	})
	mux.HandleFunc("/to-self", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/hello", http.StatusFound)
	})
	srv = httptest.NewServer(mux)
	defer srv.Close()

	granted := compileManifest(t, fetchManifest(t, "localhost"), loadSample(t, "fetch").wasm, true)
	ungranted := compileManifest(t, fetchManifest(t, "localhost"), loadSample(t, "fetch").wasm, false)

	t.Run("allowed host", func(t *testing.T) {
		out, e := call(t, granted, "fetch_url", map[string]any{
			"url": localURL(srv, "localhost", "/hello"), "method": "POST", "headers": map[string]string{"X-Probe": "yes"},
		})
		if e != nil {
			t.Fatal(e)
		}
		var res fetchOut
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		want := fetchOut{Status: 200, URL: localURL(srv, "localhost", "/hello"), ContentType: "text/plain; charset=utf-8", Body: "hello POST yes", BodyEncoding: "utf-8"}
		if res != want {
			t.Fatalf("got %+v\nwant %+v", res, want)
		}
	})
	t.Run("redirect within allowed host", func(t *testing.T) {
		out, e := call(t, granted, "fetch_url", map[string]any{"url": localURL(srv, "localhost", "/to-self")})
		if e != nil {
			t.Fatal(e)
		}
		if !bytes.Contains(out, []byte(`"url":"`+localURL(srv, "localhost", "/hello")+`"`)) {
			t.Fatalf("got %s, want the final URL", out)
		}
	})
	t.Run("body cut by the sample", func(t *testing.T) {
		out, e := call(t, granted, "fetch_url", map[string]any{"url": localURL(srv, "localhost", "/big")})
		if e != nil {
			t.Fatal(e)
		}
		var res fetchOut
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		if !res.Truncated || len(res.Body) != 128<<10 {
			t.Fatalf("truncated=%v, %d bytes; want a cut at 128 KiB", res.Truncated, len(res.Body))
		}
	})

	for _, tc := range []struct {
		name string
		mod  engine.Module
		url  string
		want string
	}{
		{"host not allowed", granted, localURL(srv, "127.0.0.1", "/hello"), `host "127.0.0.1" is not in the plugin's allowed_hosts`},
		{"other host not allowed", granted, "http://example.com/", `host "example.com" is not in the plugin's allowed_hosts`},
		{"scheme not allowed", granted, "file:///etc/passwd", `scheme "file" is not allowed`},
		{"credentials in URL", granted, strings.Replace(localURL(srv, "localhost", "/hello"), "//", "//user:pw@", 1), "credentials"},
		{"loopback without the operator grant", ungranted, localURL(srv, "localhost", "/hello"), "which is in a private, loopback"},
		{"redirect to a forbidden host", granted, localURL(srv, "localhost", "/to-forbidden"), `host "forbidden.invalid" is not in the plugin's allowed_hosts`},
		{"redirect to 127.0.0.1", granted, localURL(srv, "localhost", "/to-loopback-ip"), `host "127.0.0.1" is not in the plugin's allowed_hosts`},
		{"redirect to cloud metadata", granted, localURL(srv, "localhost", "/to-metadata"), `host "169.254.169.254" is not in the plugin's allowed_hosts`},
		{"redirect to [::1]", granted, localURL(srv, "localhost", "/to-ipv6-loopback"), `host "::1" is not in the plugin's allowed_hosts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustFail(t, tc.mod, "fetch_url", map[string]any{"url": tc.url}, toolerr.CodePermissionDenied, tc.want)
		})
	}

	t.Run("network error is not a denial", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		u := localURL(dead, "localhost", "/")
		dead.Close()
		mustFail(t, granted, "fetch_url", map[string]any{"url": u}, toolerr.CodePluginError, "request failed")
	})
}
