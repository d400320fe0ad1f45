// Package httpapi is the host API over HTTP: the JSON routes of the
// contract in DESIGN.md ("Host API over HTTP"), Prometheus metrics, and MCP
// streamable HTTP at /mcp, all in front of a Backend (a *host.Host).
//
// Trust model: the server is meant for agents on the same machine. Every
// route but /healthz needs the bearer token; every route refuses a Host
// that is not one of the server's own names and an Origin that is not the
// server's own (403), which is what stops a web page in the user's browser
// from reaching the server through DNS rebinding or a cross-site request.
// Request bodies are capped (413). Calls go to the backend's pipeline
// labelled with their entry point (http, mcp-http); admission (busy is
// 429 with Retry-After), deadlines, call metrics and the call log are the
// pipeline's, the same for every entry point.
package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhost/toolhost/api/mcpserver"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/content"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/strictjson"
)

// DefaultMaxBodyBytes is the default of Options.MaxBodyBytes.
const DefaultMaxBodyBytes = 1 << 20

// Options configure New. Token is required.
type Options struct {
	// Token is the bearer token every route but /healthz requires.
	Token string
	// InsecureNoToken serves every route without the bearer token. It is
	// for test instances that clients unable to send headers must reach
	// (the MCP conformance suite); the caller makes sure the listener is
	// loopback-only (`serve --insecure-no-token` refuses anything else).
	// Host and Origin are still checked.
	InsecureNoToken bool
	// AllowedHosts are the accepted Host values (and Origin hosts), each
	// "name" (any port) or "name:port". Empty means localhost, 127.0.0.1
	// and [::1] on the port the connection arrived on. Add other names
	// only when the operator asked for them (see LoopbackHosts).
	AllowedHosts []string
	// MaxBodyBytes caps request bodies (413 beyond); 0 means 1 MiB.
	MaxBodyBytes int64
	// Registry is where /metrics reads from; the API adds its request
	// counter, the plugin inventory and the Go runtime metrics. Pass the
	// registry of the host's metrics observer (observe.Metrics.Registry) so
	// /metrics shows the calls of every entry point. Nil: a new registry.
	Registry *prometheus.Registry
	// Logger receives rejected requests. Nil discards. (The call log is
	// the host pipeline's observer.)
	Logger *slog.Logger
	// Version is reported to MCP clients as the server version.
	Version string
	// MCPSessionTimeout ends an MCP session idle (no POST) this long; 0
	// keeps sessions until the client ends them.
	MCPSessionTimeout time.Duration
	// Approvals, when set, serves GET /v1/approvals and POST
	// /v1/approvals/{id}; AuditFile, when set, GET /v1/audit.
	Approvals Approvals
	AuditFile string
}

// API serves the host API. Create it with New, serve it with NewServer,
// and Close it after the server has shut down.
type API struct {
	b       Backend
	opts    Options
	log     *slog.Logger
	hosts   []hostPattern
	token   [sha256.Size]byte
	calls   entryGate // the JSON routes' way to the backend
	running *running
	// handlers counts the requests being handled, so Stop can wait for
	// the ones whose connections it closed.
	handlers *running
	metrics  *metrics
	mcp      *mcpserver.Server
	mux      *http.ServeMux
}

// New validates opts and returns the API over b.
func New(b Backend, opts Options) (*API, error) {
	if b == nil {
		return nil, errors.New("httpapi: a Backend is required")
	}
	if opts.Token == "" && !opts.InsecureNoToken {
		return nil, errors.New("httpapi: Options.Token is required: the API is never served without authentication")
	}
	hosts, err := parseHostPatterns(opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &API{b: b, opts: opts, log: log, hosts: hosts, token: sha256.Sum256([]byte(opts.Token))}
	a.metrics = newMetrics(b, opts.Registry)
	a.running = newRunning()
	a.handlers = newRunning()
	a.calls = entryGate{Backend: b, entry: host.EntryHTTP, running: a.running}
	a.mcp = mcpserver.New(entryGate{Backend: b, entry: host.EntryMCPHTTP, running: a.running}, opts.Version, mcpserver.WithLogger(log))
	a.routes()
	return a, nil
}

// Shutdown is the graceful end: it waits until no tool call is running (or
// ctx ends), then until every /mcp answer owed is written (a call's end
// comes before its answer is on the wire; mcpserver.AnswerGrace bounds
// that wait), then ends the MCP sessions, whose GET streams would otherwise
// keep http.Server.Shutdown waiting, and stops following the backend. Run
// it next to http.Server.Shutdown, e.g. with RegisterOnShutdown. It does not
// close the backend.
func (a *API) Shutdown(ctx context.Context) error {
	err := a.running.waitIdle(ctx)
	if !a.mcp.Drain(ctx) && err == nil {
		err = errors.New("httpapi: MCP answers still unwritten at the shutdown grace: their clients did not read them")
	}
	return err
}

// Close ends the MCP sessions at once and stops following the backend. It
// does not close the backend.
func (a *API) Close() {
	a.mcp.CloseSessions()
	a.mcp.Close()
}

func (a *API) routes() {
	mux := http.NewServeMux()
	open := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, a.guard(h, false)) }
	authed := func(pattern string, h http.Handler) { mux.Handle(pattern, a.guard(h, true)) }

	open("GET /healthz", a.healthz)
	authed("GET /v1/tools", http.HandlerFunc(a.listTools))
	authed("GET /openapi.json", http.HandlerFunc(a.openAPI))
	authed("POST /v1/tools/{name}/call", http.HandlerFunc(a.callTool))
	authed("GET /v1/plugins", http.HandlerFunc(a.listPlugins))
	authed("GET /metrics", a.metrics.handler())
	a.governanceRoutes(authed)
	authed("/mcp", a.capBody(a.mcp.Handler(mcpserver.HTTPOptions{
		HostChecked:    true,
		MaxBodyBytes:   a.opts.MaxBodyBytes,
		SessionTimeout: a.opts.MCPSessionTimeout,
	})))

	mux.Handle("/healthz", a.guard(methodNotAllowed("GET, HEAD"), false))
	for pattern, allow := range map[string]string{
		"/v1/tools": "GET, HEAD", "/v1/tools/{name}/call": "POST",
		"/v1/plugins": "GET, HEAD", "/metrics": "GET, HEAD", "/openapi.json": "GET, HEAD",
	} {
		authed(pattern, methodNotAllowed(allow))
	}
	authed("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, toolerr.Errorf(CodeNotFound, "no route %s %s; the API has GET /v1/tools, POST /v1/tools/{name}/call, GET /v1/plugins, GET /v1/approvals, POST /v1/approvals/{id}, GET /v1/audit, GET /openapi.json, GET /healthz, GET /metrics and /mcp", r.Method, r.URL.Path))
	}))
	a.mux = mux
}

// capBody answers a declared oversize body with our JSON 413; the MCP
// handler caps chunked bodies itself while reading.
func (a *API) capBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > a.opts.MaxBodyBytes {
			writeError(w, tooLarge(a.opts.MaxBodyBytes))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, toolerr.Errorf(CodeMethodNotAllowed, "%s is not allowed on %s; use %s", r.Method, r.URL.Path, allow))
	})
}

// ServeHTTP routes the request and counts it by route and status.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.handlers.add()
	defer a.handlers.done()
	rec := &statusRecorder{ResponseWriter: w}
	a.mux.ServeHTTP(rec, r)
	route := r.Pattern
	if route == "" {
		route = "none"
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	a.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
}

// guard applies the Host and Origin checks, then the token when auth is set.
func (a *API) guard(next http.Handler, auth bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := a.checkHostAndOrigin(r); e != nil {
			// Shown: a web page can send any Origin and path, and needs no
			// token to be refused (and logged).
			a.log.Warn("request refused", "reason", e.Code, "host", strictjson.Shown(r.Host), "origin", strictjson.Shown(r.Header.Get("Origin")), "path", strictjson.Shown(r.URL.Path), "remote", r.RemoteAddr)
			writeError(w, &toolerr.Error{Code: e.Code, Message: toolerr.Bound(e.Message)})
			return
		}
		if auth && !a.opts.InsecureNoToken {
			var refused *toolerr.Error
			if n := len(r.Header.Values("Authorization")); n > 1 {
				// Only one may be read: with the first alone, the token
				// and a second Authorization passed, a wrong one first
				// did not.
				refused = toolerr.Errorf(CodeUnauthorized, "the request has %d Authorization headers; send exactly one, \"Authorization: Bearer <token>\"", n)
			} else if !a.authorized(r) {
				refused = toolerr.Errorf(CodeUnauthorized, "missing or wrong bearer token: send the header \"Authorization: Bearer <token>\" with the token from $TOOLHOST_HOME/token (or TOOLHOST_TOKEN)")
			}
			if refused != nil {
				a.log.Info("request refused", "reason", CodeUnauthorized, "path", strictjson.Shown(r.URL.Path), "remote", r.RemoteAddr)
				writeError(w, refused)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authorized compares hashes in constant time, so neither the token's
// bytes nor its length leak through timing.
func (a *API) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(sum[:], a.token[:]) == 1
}

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (a *API) listPlugins(w http.ResponseWriter, r *http.Request) {
	plugins := a.b.Plugins()
	if plugins == nil {
		plugins = []host.PluginInfo{}
	}
	for i := range plugins {
		// The manifest's content is already in the other fields; its exact
		// signed bytes are for `toolhost plugin inspect`, not every listing.
		plugins[i].Manifest = nil
	}
	writeJSON(w, http.StatusOK, map[string][]host.PluginInfo{"plugins": plugins})
}

func (a *API) callTool(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	// A request refused here never reaches the pipeline; it is recorded
	// (audit, metrics, log) all the same.
	refuse := func(request []byte, e *toolerr.Error) {
		a.calls.refused(r.Context(), name, request, e)
		writeError(w, e)
	}
	if r.ContentLength > a.opts.MaxBodyBytes {
		refuse(nil, tooLarge(a.opts.MaxBodyBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			refuse(nil, tooLarge(mbe.Limit))
			return
		}
		refuse(body, bodyReadError(err))
		return
	}
	args, perr := parseCallBody(body)
	if perr != nil {
		refuse(body, perr)
		return
	}
	// r.Context() ends when the client goes away: the call is cancelled.
	res, err := a.calls.Call(r.Context(), name, args)
	if err != nil {
		writeError(w, asError(err))
		return
	}
	// A multi-block envelope (package content) comes out as
	// {"result":{"content":[…]}}; every other result as it is.
	if blocks, ok, err := content.Parse(res); ok {
		if err != nil {
			writeError(w, asError(err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"result": map[string]any{"content": blocks}})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Result json.RawMessage `json:"result"`
	}{res})
}

func tooLarge(limit int64) *toolerr.Error {
	return toolerr.Errorf(CodePayloadTooLarge, "the request body is larger than %d bytes; send smaller arguments", limit)
}

// parseCallBody reads {"arguments":{…}} strictly: one JSON object whose
// only key is "arguments", exactly spelled and not repeated (encoding/json
// would take the last duplicate and match keys case-insensitively). An
// empty body, {} and "arguments": null all mean no arguments. The argument
// object itself is only checked for well-formedness and passed on as raw
// bytes: the host parses it, once, strictly, and validates it.
func parseCallBody(body []byte) (json.RawMessage, *toolerr.Error) {
	shape := func(format string, args ...any) *toolerr.Error {
		return toolerr.Errorf(toolerr.CodeInvalidArguments, "the request body must be {\"arguments\":{...}}: "+format, args...)
	}
	body = bytes.Trim(body, jsonSpace)
	if len(body) == 0 {
		return json.RawMessage("{}"), nil
	}
	if body[0] != '{' {
		return nil, shape("the body is not a JSON object")
	}
	var args json.RawMessage
	err := strictjson.Members(body, func(key string, value []byte) error {
		if key != "arguments" {
			return shape("unexpected key %q", strictjson.Shown(key))
		}
		args = value
		return nil
	})
	var te *toolerr.Error
	switch {
	case errors.As(err, &te):
		return nil, te
	case err != nil:
		return nil, shape("invalid JSON: %s", strictjson.Detail(err))
	}
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage("{}"), nil
	}
	if args[0] != '{' {
		return nil, shape(`"arguments" must be a JSON object, not %s`, jsonKind(args[0]))
	}
	return args, nil
}

// jsonSpace is JSON's whitespace (RFC 8259), narrower than Unicode's.
const jsonSpace = " \t\r\n"

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// statusRecorder notes the status for metrics. Unwrap lets
// http.ResponseController reach the connection (flushes and deadlines for
// MCP streams).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// NewServer returns an http.Server for h on addr with timeouts suited to the
// host API; approvalWait is how long a call may wait for a person (serve
// --approval-timeout; 0: govern.DefaultApprovalTimeout):
//
//   - ReadHeaderTimeout 10 s and ReadTimeout 30 s bound slow clients
//     (headers, then a body of at most MaxBodyBytes). They do not bound the
//     handler: net/http lifts the read deadline once the body is read.
//   - WriteTimeout 2 min plus approvalWait: above the 60 s maximum tool
//     deadline plus compilation on a first call and encoding, after the
//     longest wait for a person, so that a call approved (or denied by the
//     timeout) at the end of that wait still gets its answer — with the
//     bare 2 min, an approved call ran and its caller got an empty reply.
//     MCP GET streams live for a whole session, so the MCP handler lifts
//     the write deadline for them alone; everything else keeps this bound.
//   - IdleTimeout 2 min for keep-alive connections; MaxHeaderBytes 64 KiB.
func NewServer(h http.Handler, addr string, approvalWait time.Duration) *http.Server {
	if approvalWait <= 0 {
		approvalWait = govern.DefaultApprovalTimeout
	}
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2*time.Minute + approvalWait,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
