package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
)

const testToken = "s3cret-token"

// serve starts the API over b on a loopback httptest server.
func serve(t *testing.T, b Backend, opts Options) (*API, *httptest.Server) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	api, err := New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		srv.Close()
		api.Close()
	})
	return api, srv
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorCode() string {
	var e errorBody
	if json.Unmarshal(r.body, &e) != nil {
		return ""
	}
	return string(e.Error.Code)
}

// do sends a request; auth "" means the right token, "-" none, anything
// else is the Authorization header as given.
func do(t *testing.T, srv *httptest.Server, method, path, body, auth string, header ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	switch auth {
	case "":
		req.Header.Set("Authorization", "Bearer "+testToken)
	case "-":
	default:
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, data}
}

func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

func TestRoutes(t *testing.T) {
	b := newFake()
	_, srv := serve(t, b, Options{})
	tests := []struct {
		name, method, path, body, auth string
		wantStatus                     int
		wantCode                       string
		check                          func(t *testing.T, r response)
	}{
		{name: "healthz needs no token", method: "GET", path: "/healthz", auth: "-", wantStatus: 200, check: func(t *testing.T, r response) {
			if got := decode[map[string]string](t, r.body); got["status"] != "ok" {
				t.Errorf("healthz = %s", r.body)
			}
		}},
		{name: "healthz wrong method", method: "POST", path: "/healthz", auth: "-", wantStatus: 405, wantCode: "method_not_allowed"},
		{name: "tools without token", method: "GET", path: "/v1/tools", auth: "-", wantStatus: 401, wantCode: "unauthorized", check: func(t *testing.T, r response) {
			if r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		}},
		{name: "tools wrong token", method: "GET", path: "/v1/tools", auth: "Bearer nope", wantStatus: 401, wantCode: "unauthorized"},
		{name: "tools token prefix", method: "GET", path: "/v1/tools", auth: "Bearer " + testToken[:4], wantStatus: 401, wantCode: "unauthorized"},
		{name: "tools basic scheme", method: "GET", path: "/v1/tools", auth: "Basic " + testToken, wantStatus: 401, wantCode: "unauthorized"},
		{name: "bearer scheme is case-insensitive", method: "GET", path: "/v1/tools", auth: "bearer " + testToken, wantStatus: 200},
		{name: "tools plain", method: "GET", path: "/v1/tools", wantStatus: 200, check: func(t *testing.T, r response) {
			got := decode[struct{ Tools []host.ToolInfo }](t, r.body)
			if len(got.Tools) != 3 || got.Tools[0].Name != "echo" || got.Tools[0].Plugin != "alpha" || got.Tools[0].Version != "1.0.0" ||
				!strings.Contains(string(got.Tools[0].Parameters), `"properties"`) {
				t.Errorf("tools = %s", r.body)
			}
			if r.header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type = %q", r.header.Get("Content-Type"))
			}
		}},
		{name: "tools openai", method: "GET", path: "/v1/tools?format=openai", wantStatus: 200, check: func(t *testing.T, r response) {
			got := decode[map[string][]map[string]any](t, r.body)
			first := got["tools"][0]
			fn, _ := first["function"].(map[string]any)
			if first["type"] != "function" || fn["name"] != "echo" || fn["description"] != "Echo the arguments back" || fn["parameters"] == nil || len(first) != 2 || len(fn) != 3 {
				t.Errorf("openai tools = %s", r.body)
			}
		}},
		{name: "tools mcp", method: "GET", path: "/v1/tools?format=mcp", wantStatus: 200, check: func(t *testing.T, r response) {
			got := decode[map[string][]map[string]any](t, r.body)
			first := got["tools"][0]
			if first["name"] != "echo" || first["description"] == nil || first["inputSchema"] == nil || len(first) != 3 {
				t.Errorf("mcp tools = %s", r.body)
			}
		}},
		{name: "tools unknown format", method: "GET", path: "/v1/tools?format=xml", wantStatus: 400, wantCode: "invalid_request"},
		{name: "tools wrong method", method: "POST", path: "/v1/tools", wantStatus: 405, wantCode: "method_not_allowed", check: func(t *testing.T, r response) {
			if r.header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		}},
		{name: "plugins", method: "GET", path: "/v1/plugins", wantStatus: 200, check: func(t *testing.T, r response) {
			got := decode[map[string][]map[string]any](t, r.body)
			p := got["plugins"]
			if len(p) != 2 || p[0]["name"] != "alpha" || p[0]["state"] != "verified" || p[1]["state"] != "quarantined" ||
				!strings.HasPrefix(p[0]["digest"].(string), "sha256:abcdef") {
				t.Errorf("plugins = %s", r.body)
			}
			if _, ok := p[0]["manifest"]; ok {
				t.Error("plugin listing carries the manifest bytes")
			}
		}},
		{name: "plugins without token", method: "GET", path: "/v1/plugins", auth: "-", wantStatus: 401, wantCode: "unauthorized"},
		{name: "metrics without token", method: "GET", path: "/metrics", auth: "-", wantStatus: 401, wantCode: "unauthorized"},
		{name: "metrics", method: "GET", path: "/metrics", wantStatus: 200},
		{name: "call", method: "POST", path: "/v1/tools/echo/call", body: `{"arguments":{"text":"hi"}}`, wantStatus: 200, check: func(t *testing.T, r response) {
			if string(r.body) != `{"result":{"echo":{"text":"hi"}}}`+"\n" {
				t.Errorf("body = %s", r.body)
			}
		}},
		{name: "call without token", method: "POST", path: "/v1/tools/echo/call", body: `{}`, auth: "-", wantStatus: 401, wantCode: "unauthorized"},
		{name: "call unknown tool", method: "POST", path: "/v1/tools/nope/call", body: `{}`, wantStatus: 404, wantCode: "tool_not_found"},
		{name: "call wrong method", method: "GET", path: "/v1/tools/echo/call", wantStatus: 405, wantCode: "method_not_allowed"},
		{name: "unknown route", method: "GET", path: "/v2/everything", wantStatus: 404, wantCode: "not_found"},
		{name: "unknown route without token", method: "GET", path: "/v2/everything", auth: "-", wantStatus: 401, wantCode: "unauthorized"},
		{name: "mcp without token", method: "POST", path: "/mcp", body: `{}`, auth: "-", wantStatus: 401, wantCode: "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, srv, tt.method, tt.path, tt.body, tt.auth)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", r.status, tt.wantStatus, r.body)
			}
			if tt.wantCode != "" {
				if got := r.errorCode(); got != tt.wantCode {
					t.Errorf("code = %q, want %q; body %s", got, tt.wantCode, r.body)
				}
				if e := decode[errorBody](t, r.body); len(e.Error.Message) < 10 {
					t.Errorf("message %q is not one a model can act on", e.Error.Message)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestCallBody(t *testing.T) {
	b := newFake()
	_, srv := serve(t, b, Options{})
	tests := []struct {
		name, body string
		wantStatus int
		wantArgs   string // what the backend receives, for 200
	}{
		{"empty body", "", 200, `{}`},
		{"empty object", `{}`, 200, `{}`},
		{"null arguments", `{"arguments":null}`, 200, `{}`},
		{"arguments passed raw", `{"arguments":{"text":"hi","n":1.50}}`, 200, `{"text":"hi","n":1.50}`},
		{"whitespace around", " \n{\"arguments\":{}}\n ", 200, `{}`},
		{"not an object", `[]`, 400, ""},
		{"a string", `"hi"`, 400, ""},
		{"invalid JSON", `{"arguments":`, 400, ""},
		{"unknown key", `{"args":{}}`, 400, ""},
		{"case-variant key", `{"Arguments":{}}`, 400, ""},
		{"duplicate key", `{"arguments":{},"arguments":{"x":1}}`, 400, ""},
		{"arguments an array", `{"arguments":[1]}`, 400, ""},
		{"arguments a string", `{"arguments":"{}"}`, 400, ""},
		{"trailing data", `{"arguments":{}} {}`, 400, ""},
		{"long unknown key", `{"` + strings.Repeat("k", 200_000) + `":{}}`, 400, ""},
		{"long duplicate key", `{"arguments":{},"` + strings.Repeat("k", 200_000) + `":1,"` + strings.Repeat("k", 200_000) + `":2}`, 400, ""},
		{"deep arguments", `{"arguments":{"a":` + strings.Repeat("[", 20_000) + `}}`, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, srv, "POST", "/v1/tools/echo/call", tt.body, "")
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", r.status, tt.wantStatus, r.body)
			}
			if tt.wantStatus != 200 {
				if code := r.errorCode(); code != "invalid_arguments" {
					t.Errorf("code = %q, want invalid_arguments", code)
				}
				// The message quotes what it refuses, bounded.
				if len(r.body) > 1024 {
					t.Errorf("the error is %d bytes: %.200s…", len(r.body), r.body)
				}
				return
			}
			if got := string(b.lastArgs("echo")); got != tt.wantArgs {
				t.Errorf("backend got %s, want %s", got, tt.wantArgs)
			}
		})
	}
}

func TestCallErrorStatus(t *testing.T) {
	b := newFake()
	_, srv := serve(t, b, Options{})
	tests := []struct {
		code toolerr.Code
		want int
	}{
		{toolerr.CodeInvalidArguments, 400},
		{toolerr.CodeToolNotFound, 404},
		{toolerr.CodeBusy, 429},
		{toolerr.CodeTimeout, 504},
		{toolerr.CodeUnavailable, 503},
		{toolerr.CodeMemoryLimit, 422},
		{toolerr.CodeOutputTooLarge, 422},
		{toolerr.CodePluginError, 422},
		{toolerr.CodeInvalidModule, 422},
		{toolerr.CodePermissionDenied, 422},
		{toolerr.CodeInternal, 500},
		{"some_future_code", 500},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			b.failWith("echo", tt.code)
			r := do(t, srv, "POST", "/v1/tools/echo/call", `{}`, "")
			if r.status != tt.want || r.errorCode() != string(tt.code) {
				t.Errorf("got %d %s, want %d with code %s", r.status, r.body, tt.want, tt.code)
			}
			if tt.code == toolerr.CodeBusy && r.header.Get("Retry-After") == "" {
				t.Error("busy without Retry-After")
			}
		})
	}
	t.Run("non-host error", func(t *testing.T) {
		b.handle("echo", func(context.Context, []byte) (json.RawMessage, error) { return nil, io.ErrUnexpectedEOF })
		r := do(t, srv, "POST", "/v1/tools/echo/call", `{}`, "")
		if r.status != 500 || r.errorCode() != "internal_error" {
			t.Errorf("got %d %s", r.status, r.body)
		}
	})
}

func TestHostAndOrigin(t *testing.T) {
	b := newFake()
	_, srv := serve(t, b, Options{})
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	_, custom := serve(t, b, Options{AllowedHosts: []string{"toolhost.lan:7411", "box"}})
	tests := []struct {
		name   string
		srv    *httptest.Server
		path   string
		host   string
		origin string
		want   int
	}{
		{"localhost", srv, "/v1/tools", "localhost:" + port, "", 200},
		{"127.0.0.1", srv, "/v1/tools", "127.0.0.1:" + port, "", 200},
		{"[::1]", srv, "/v1/tools", "[::1]:" + port, "", 200},
		{"uppercase and trailing dot", srv, "/v1/tools", "LOCALHOST.:" + port, "", 200},
		{"rebinding name", srv, "/v1/tools", "attacker.example:" + port, "", 403},
		{"rebinding name on healthz", srv, "/healthz", "attacker.example:" + port, "", 403},
		{"rebinding name on mcp", srv, "/mcp", "attacker.example:" + port, "", 403},
		{"loopback name on another port", srv, "/v1/tools", "localhost:1", "", 403},
		{"other loopback address", srv, "/v1/tools", "127.0.0.2:" + port, "", 403},
		{"same origin", srv, "/v1/tools", "localhost:" + port, "http://localhost:" + port, 200},
		{"https origin", srv, "/v1/tools", "localhost:" + port, "https://127.0.0.1:" + port, 200},
		{"foreign origin", srv, "/v1/tools", "localhost:" + port, "https://evil.example", 403},
		{"foreign origin on healthz", srv, "/healthz", "localhost:" + port, "https://evil.example", 403},
		{"foreign origin on mcp", srv, "/mcp", "localhost:" + port, "https://evil.example", 403},
		{"null origin", srv, "/v1/tools", "localhost:" + port, "null", 403},
		{"origin on another port", srv, "/v1/tools", "localhost:" + port, "http://localhost:8080", 403},
		{"origin without port", srv, "/v1/tools", "localhost:" + port, "http://localhost", 403},
		{"origin with a path", srv, "/v1/tools", "localhost:" + port, "http://localhost:" + port + "/x", 403},
		{"file origin", srv, "/v1/tools", "localhost:" + port, "file://", 403},
		{"allowed name and port", custom, "/v1/tools", "toolhost.lan:7411", "http://toolhost.lan:7411", 200},
		{"allowed name, wrong port", custom, "/v1/tools", "toolhost.lan:7412", "", 403},
		{"allowed name, any port", custom, "/v1/tools", "box:9", "", 200},
		{"loopback not in the custom list", custom, "/v1/tools", "localhost:" + port, "", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := []string{"Host", tt.host}
			if tt.origin != "" {
				hdr = append(hdr, "Origin", tt.origin)
			}
			method, body := "GET", ""
			if tt.path == "/mcp" {
				method, body = "POST", `{}`
			}
			r := do(t, tt.srv, method, tt.path, body, "", hdr...)
			if r.status != tt.want {
				t.Fatalf("status = %d, want %d; body %s", r.status, tt.want, r.body)
			}
			if tt.want == 403 && r.errorCode() != "forbidden" {
				t.Errorf("code = %q, want forbidden", r.errorCode())
			}
		})
	}
	// A web page can send any Origin, and a client any Host, without a
	// token: the refusal quotes them bounded.
	long := strings.Repeat("a", 60_000)
	for _, hdr := range [][]string{{"Host", long + ".example:" + port}, {"Host", "localhost:" + port, "Origin", "http://" + long}} {
		if r := do(t, srv, "GET", "/v1/tools", "", "-", hdr...); r.status != 403 || len(r.body) > 1024 {
			t.Errorf("a 60 KB %s: %d, %d bytes", hdr[len(hdr)-2], r.status, len(r.body))
		}
	}
	// A header the check reads, given twice, is refused whichever comes
	// first: only the first was read, so a foreign second Origin and a
	// wrong second token passed.
	own := "http://localhost:" + port
	for _, tt := range []struct {
		name, auth string
		header     []string
		want       int
	}{
		{"own then foreign Origin", "", []string{"Origin", own, "Origin", "https://evil.example"}, 403},
		{"foreign then own Origin", "", []string{"Origin", "https://evil.example", "Origin", own}, 403},
		{"own Origin twice", "", []string{"Origin", own, "Origin", own}, 403},
		{"token then a wrong one", "", []string{"Authorization", "Bearer nope"}, 401},
		{"a wrong one then the token", "Bearer nope", []string{"Authorization", "Bearer " + testToken}, 401},
		{"the token twice", "", []string{"Authorization", "Bearer " + testToken}, 401},
	} {
		r := do(t, srv, "GET", "/v1/tools", "", tt.auth, tt.header...)
		if r.status != tt.want || !strings.Contains(string(r.body), "headers; send") {
			t.Errorf("%s: %d %s, want %d naming the repeated header", tt.name, r.status, r.body, tt.want)
		}
	}
	// Refused before authentication: a rebinding page learns nothing.
	if r := do(t, srv, "GET", "/v1/tools", "", "-", "Host", "attacker.example:"+port); r.status != 403 {
		t.Errorf("foreign Host without token: %d, want 403", r.status)
	}
}

func TestBodyCap(t *testing.T) {
	b := newFake()
	_, srv := serve(t, b, Options{MaxBodyBytes: 100})
	big := `{"arguments":{"text":"` + strings.Repeat("x", 200) + `"}}`
	if r := do(t, srv, "POST", "/v1/tools/echo/call", big, ""); r.status != 413 || r.errorCode() != "payload_too_large" {
		t.Errorf("with Content-Length: %d %s", r.status, r.body)
	}
	// Chunked: no Content-Length, the cap applies while reading.
	req, _ := http.NewRequest("POST", srv.URL+"/v1/tools/echo/call", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(data), "payload_too_large") {
		t.Errorf("chunked: %d %s", resp.StatusCode, data)
	}
	if r := do(t, srv, "POST", "/mcp", big, "", "Content-Type", "application/json", "Accept", "application/json, text/event-stream"); r.status != 413 || r.errorCode() != "payload_too_large" {
		t.Errorf("/mcp: %d %s", r.status, r.body)
	}
	if r := do(t, srv, "POST", "/v1/tools/echo/call", `{"arguments":{"text":"small"}}`, ""); r.status != 200 {
		t.Errorf("small body: %d %s", r.status, r.body)
	}
}

// blocker makes tool "slow" block until released, reporting each entry.
type blocker struct {
	entered chan struct{}
	release chan struct{}
}

func block(b *fakeBackend) *blocker {
	bl := &blocker{entered: make(chan struct{}, 64), release: make(chan struct{})}
	b.handle("slow", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		bl.entered <- struct{}{}
		select {
		case <-bl.release:
			return json.RawMessage(`{"released":true}`), nil
		case <-ctx.Done():
			return nil, toolerr.Errorf(toolerr.CodeTimeout, "cancelled")
		}
	})
	return bl
}

func TestMetrics(t *testing.T) {
	b := newFake()
	b.failWith("other", toolerr.CodeTimeout)
	_, srv := serve(t, b, Options{})
	do(t, srv, "POST", "/v1/tools/echo/call", `{}`, "")
	do(t, srv, "POST", "/v1/tools/echo/call", `{}`, "")
	do(t, srv, "POST", "/v1/tools/other/call", `{}`, "")
	do(t, srv, "POST", "/v1/tools/no-such-tool-1/call", `{}`, "")
	do(t, srv, "POST", "/v1/tools/no-such-tool-2/call", `{}`, "")
	r := do(t, srv, "GET", "/metrics", "", "")
	if r.status != 200 {
		t.Fatalf("metrics: %d", r.status)
	}
	body := string(r.body)
	// The call metrics are the host pipeline's (host/observe, and
	// TestEveryEntryPointCounted with a real host).
	mustContain(t, body,
		`toolhost_plugins_installed{state="verified"} 1`,
		`toolhost_plugins_installed{state="quarantined"} 1`,
		`toolhost_plugins_installed{state="unavailable"} 0`,
		`toolhost_tools_available 3`,
		`toolhost_http_requests_total{code="200",route="POST /v1/tools/{name}/call"} 2`,
		`toolhost_http_requests_total{code="404",route="POST /v1/tools/{name}/call"} 2`,
		`go_goroutines`,
	)
	if strings.Contains(body, "no-such-tool") {
		t.Error("metrics carry a label per unknown tool name")
	}
}

// A call that runs longer than the server's ReadTimeout must still be
// answered with its context intact: ReadTimeout bounds reading the request,
// not the handler.
func TestCallOutlivesReadTimeout(t *testing.T) {
	b := newFake()
	b.handle("slow", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		select {
		case <-time.After(400 * time.Millisecond):
			return json.RawMessage(`{"done":true}`), nil
		case <-ctx.Done():
			return nil, toolerr.Errorf(toolerr.CodeTimeout, "context ended early: %v", ctx.Err())
		}
	})
	api, err := New(b, Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = NewServer(api, "", 0)
	srv.Config.ReadTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	if r := do(t, srv, "POST", "/v1/tools/slow/call", `{}`, ""); r.status != 200 {
		t.Errorf("slow call: %d %s", r.status, r.body)
	}
}

// A body that stalls past the read timeout is 408 request_timeout, with a
// message that says what to do (not which socket timed out), on the call
// route and the approval route.
func TestStalledBodyIsRequestTimeout(t *testing.T) {
	api, err := New(newFake(), Options{Token: testToken, Approvals: &govern.Approvals{}})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = NewServer(api, "", 0)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, path := range []string{"/v1/tools/echo/call", "/v1/approvals/x"} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{\"arguments\":", path, host, testToken)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"request_timeout"`) ||
			!strings.Contains(string(body), "send the whole body") || strings.Contains(string(body), "tcp") {
			t.Errorf("%s with a stalled body: %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestNewServer(t *testing.T) {
	s := NewServer(http.NotFoundHandler(), "127.0.0.1:7411", 0)
	if s.Addr != "127.0.0.1:7411" || s.Handler == nil {
		t.Errorf("server = %+v", s)
	}
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("unset limits: %+v", s)
	}
	// A call may wait for a person (the approval timeout), then run up to
	// its 60 s deadline: its answer must still be written.
	for _, wait := range []time.Duration{0, time.Second, 10 * time.Minute} {
		longest := wait
		if wait == 0 {
			longest = govern.DefaultApprovalTimeout
		}
		if s := NewServer(http.NotFoundHandler(), "", wait); s.WriteTimeout <= longest+60*time.Second {
			t.Errorf("approval wait %v: WriteTimeout %v does not exceed it plus the 60 s maximum tool deadline", wait, s.WriteTimeout)
		}
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(newFake(), Options{}); err == nil {
		t.Error("New without a token succeeded")
	}
	for _, h := range []string{"", "a:b:c:", "[::1", "host:port", "host:123456"} {
		if _, err := New(newFake(), Options{Token: "t", AllowedHosts: []string{h}}); err == nil {
			t.Errorf("allowed host %q accepted", h)
		}
	}
	if _, err := New(nil, Options{Token: "t"}); err == nil {
		t.Error("New without a backend succeeded")
	}
}

func TestLoopbackHosts(t *testing.T) {
	got, err := LoopbackHosts("127.0.0.1:7411")
	if err != nil || !reflect.DeepEqual(got, []string{"localhost:7411", "127.0.0.1:7411", "[::1]:7411"}) {
		t.Errorf("LoopbackHosts = %v, %v", got, err)
	}
	if _, err := LoopbackHosts("7411"); err == nil {
		t.Error("address without a port accepted")
	}
}

func mustContain(t *testing.T, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("missing %s", w)
		}
	}
	if t.Failed() {
		t.Logf("body:\n%s", body)
	}
}
