//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but still part of both revisions we serve; clients that ask for lines get them

// Package mcpserver serves the host's tools over the Model Context Protocol,
// with the official go-sdk, over stdio and streamable HTTP.
//
// The MCP tools mirror the backend: name, description, and the plugin's
// signed JSON Schema as inputSchema, byte for byte. Arguments reach the
// backend as raw JSON, so the host's validator is the only one and its
// invalid_arguments message reaches the model as an isError result. When the
// backend's tool set changes (a plugin installed or removed, a curator key
// revoked), the server adds and removes tools and the SDK sends
// notifications/tools/list_changed to every connected session.
//
// Trust model: this package authenticates nobody. Over HTTP serve it behind
// httpapi, which checks the bearer token and the Host and Origin allow-lists;
// over stdio the client that spawned the process is the user.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// maxStdioLine caps one JSON-RPC message read over stdio, the same order
// as the HTTP body cap (arguments are capped at 1 MiB by the host).
const maxStdioLine = 4 << 20

// Option configures New.
type Option func(*config)

type config struct {
	logger *slog.Logger
}

// WithLogger sets the logger for the server and the SDK's own messages.
// Without it nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// Server is an MCP server whose tools follow a Backend. Create it with New
// and stop it with Close.
type Server struct {
	b   Backend
	mcp *mcp.Server
	log *slog.Logger

	mu sync.Mutex
	// served maps each tool name on the MCP server to the definition it
	// was added with, so a re-sync touches only what changed.
	served map[string]string

	progressEvery time.Duration // heartbeat interval; tests shorten it
	logs          logLimiter    // bounds log notifications per session
	pluginLogs    logLimiter    // bounds plugins' log lines per session
	levels        sessionLevels // each session's logging/setLevel
	// plugins maps each served tool to its plugin (guarded by mu).
	plugins map[string]string

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	parked parking      // calls waiting for their client's approval (elicit.go)
	calls  sessionCalls // calls running in each HTTP session (sessions.go)
	// answering counts the HTTP requests that owe an answer (answering.go).
	answering answering
}

// New returns a server that serves b's tools now and follows b.Changed
// until Close. version is reported to clients as the server version.
func New(b Backend, version string, opts ...Option) *Server {
	cfg := config{logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{
		b:             b,
		log:           cfg.logger,
		served:        map[string]string{},
		plugins:       map[string]string{},
		progressEvery: progressEvery,
		pluginLogs:    logLimiter{burst: pluginLogBurst},
		stop:          make(chan struct{}),
		done:          make(chan struct{}),
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "toolhost", Version: version}, &mcp.ServerOptions{
		Logger: cfg.logger,
		// Advertise tools with listChanged even while no plugin is
		// installed, so that clients listen for the first install.
		// Prompts: the SDK answers prompts/list (empty) whatever is
		// declared, and 2026-07-28 requires what is answered to be declared.
		Capabilities: &mcp.ServerCapabilities{
			Tools:   &mcp.ToolCapabilities{ListChanged: true},
			Prompts: &mcp.PromptCapabilities{},
			// The host's own lines about calls (logging.go).
			Logging: &mcp.LoggingCapabilities{},
		},
	})
	// Added after the SDK's own multi-round-trip middleware, so around it:
	// settleParked sees how the SDK's round trip with the client ended.
	s.mcp.AddReceivingMiddleware(s.trackLevels, boundErrors, s.settleParked, s.unknownTools)
	changed := s.sync()
	go s.watch(changed)
	return s
}

// boundErrors bounds the message of every JSON-RPC error a method
// answers with, as toolerr.Errorf bounds the host's: the SDK quotes what it
// refuses (an unknown tool's name, for one), which a request can make as
// long as its body.
func boundErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil || len(err.Error()) <= toolerr.MaxMessageBytes {
			return res, err
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return res, &jsonrpc.Error{Code: we.Code, Message: toolerr.Bound(we.Message), Data: we.Data}
		}
		return res, errors.New(toolerr.Bound(err.Error()))
	}
}

// unknownTools sends a tools/call for a name the backend does not have
// through the backend's pipeline, which records it (tool_not_found) as
// every other entry point's; the SDK would refuse it before any handler
// runs, and the audit log would not know the call was made. The answer is
// the SDK's: a JSON-RPC invalid-params error. A tool installed since the
// last sync runs and answers. A tool the backend has but MCP left out (a
// definition the SDK refuses) is refused by the SDK, as before.
func (s *Server) unknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		s.mu.Lock()
		_, served := s.served[r.Params.Name]
		_, known := s.plugins[r.Params.Name]
		s.mu.Unlock()
		if served || known {
			return next(ctx, method, req)
		}
		if host.EntryOf(ctx) == host.EntryGo {
			ctx = host.WithEntry(ctx, host.EntryMCPHTTP)
		}
		res, err := s.b.Call(ctx, r.Params.Name, r.Params.Arguments)
		if toolerr.CodeOf(err) == toolerr.CodeToolNotFound {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: toolerr.Bound(fmt.Sprintf("unknown tool %q: list the tools (tools/list) and call one of them", r.Params.Name))}
		}
		return s.answer(ctx, r, res, err), nil
	}
}

// pluginOf names the plugin of a served tool.
func (s *Server) pluginOf(tool string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.plugins[tool]; p != "" {
		return p
	}
	return tool
}

// Close stops following the backend. Sessions already connected stay
// open until their transport ends or CloseSessions.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
}

// CloseSessions ends every connected session. Over HTTP this ends the
// sessions' GET streams, which http.Server.Shutdown would otherwise wait
// for forever, and every stream still open: a call running in a session,
// or one that ended but whose answer the SDK has not yet written, loses
// its answer. At shutdown use Drain, which waits for the answers first.
func (s *Server) CloseSessions() {
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
}

func (s *Server) watch(changed <-chan struct{}) {
	defer close(s.done)
	for {
		select {
		case <-changed:
			changed = s.sync()
		case <-s.stop:
			return
		}
	}
}

// sync makes the MCP server's tools equal to the backend's and returns the
// channel that signals the next change. The channel is taken before the
// tools are read, so a change during sync is never lost.
func (s *Server) sync() <-chan struct{} {
	changed := s.b.Changed()
	want := s.b.Tools()

	s.mu.Lock()
	defer s.mu.Unlock()
	keep := make(map[string]bool, len(want))
	var gone []string
	clear(s.plugins)
	for _, t := range want {
		keep[t.Name] = true
		s.plugins[t.Name] = t.Plugin
	}
	for name := range s.served {
		if !keep[name] {
			gone = append(gone, name)
			delete(s.served, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for _, t := range want {
		def := definition(t)
		if s.served[t.Name] == def {
			continue
		}
		if err := s.addTool(t); err != nil {
			// The tool stays callable over the HTTP API; MCP clients do not
			// see it rather than seeing something the SDK rejects.
			s.log.Error("mcp: tool left out", "tool", t.Name, "plugin", t.Plugin, "err", err)
			if _, old := s.served[t.Name]; old {
				s.mcp.RemoveTools(t.Name)
				delete(s.served, t.Name)
			}
			continue
		}
		s.served[t.Name] = def
	}
	return changed
}

// definition identifies what a client sees of a tool.
func definition(t host.ToolInfo) string {
	return t.Name + "\x00" + t.Description + "\x00" + string(t.Parameters) + "\x00" + governanceDefinition(t)
}

// addTool registers t with the low-level API: the schema goes out as the
// exact signed bytes (but for what ObjectSchema rewrites), and no SDK-side
// validation runs before the host's.
func (s *Server) addTool(t host.ToolInfo) (err error) {
	schema := bytes.Clone(t.Parameters)
	var root struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(schema, &root); err != nil || root.Type != "object" {
		return errors.New(`parameters are not a JSON Schema object with "type": "object"`)
	}
	// AddTool panics on definitions it refuses (for example a malformed
	// x-mcp-header annotation); a signed manifest must not take the
	// server down with it.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("refused by the MCP SDK: %v", r)
		}
	}()
	tool := &mcp.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: ObjectSchema(schema),
	}
	addToolFields(tool, t)
	s.mcp.AddTool(tool, s.callTool)
	return nil
}

func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params == nil {
		return errorResult(toolerr.Errorf(toolerr.CodeInvalidArguments, "tools/call needs params with a tool name")), nil
	}
	if host.EntryOf(ctx) == host.EntryGo {
		// Only Run labels its sessions; everything else came through Handler.
		ctx = host.WithEntry(ctx, host.EntryMCPHTTP)
	}
	if req.Session != nil {
		if id := req.Session.ID(); id != "" {
			var forget func()
			ctx, forget = s.calls.track(ctx, id)
			defer forget()
		}
	}
	var progress *progressStream
	tok := req.Params.GetProgressToken()
	if tok != nil && req.Session != nil {
		from, resumed := s.parked.progressFrom(req.Params.RequestState, tok)
		progress = heartbeat(ctx, req.Session, tok, s.progressEvery, resumed, from)
	}
	var res *mcp.CallToolResult
	defer func() {
		if progress == nil {
			return
		}
		if res != nil && res.InputRequests != nil {
			// Parked, not finished: the retry's stream goes on from here.
			s.parked.noteProgress(res.RequestState, tok, progress.park())
			return
		}
		progress.stop()
	}()
	ctx = s.logStart(ctx, req)
	if ev := s.events(ctx, req, progress); ev != nil {
		ctx = host.WithCallEvents(ctx, ev)
		defer ev.close() // before progress: lines, then "finished"
	}
	res, err := s.callGoverned(ctx, req)
	return res, err
}

// errorResult turns a call failure into a tool result the model reads:
// "code: message", with isError set, as the MCP spec asks for tool errors.
func errorResult(err error) *mcp.CallToolResult {
	var he *toolerr.Error
	if !errors.As(err, &he) {
		he = &toolerr.Error{Code: toolerr.CodeInternal, Message: err.Error()}
	}
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: string(he.Code) + ": " + he.Message}},
	}
}

// successResult returns the result JSON as text, and also as
// structuredContent when it is an object (the only shape the spec allows
// there). A JSON string result is a plugin's plain-text output: it goes out
// unquoted, as the text the plugin wrote.
// (A result in the multi-block envelope never gets here: answer turns it
// into its content blocks.)
func successResult(res json.RawMessage) *mcp.CallToolResult {
	res = bytes.TrimSpace(res)
	text := string(res)
	if len(res) > 0 && res[0] == '"' {
		var str string
		if json.Unmarshal(res, &str) == nil {
			text = str
		}
	}
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if len(res) > 0 && res[0] == '{' {
		r.StructuredContent = json.RawMessage(bytes.Clone(res))
	}
	return r
}

// Run serves one MCP session of newline-delimited JSON-RPC over r and w,
// until r ends (the client closed it) or ctx is done; both end it without
// error. Nothing else may write to w meanwhile. Bad lines get error responses and the session goes on
// (see lineTransport); calls are labelled host.EntryMCPStdio.
func (s *Server) Run(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	ctx = host.WithEntry(ctx, host.EntryMCPStdio)
	err := s.mcp.Run(ctx, &lineTransport{r: r, w: w, maxLine: maxStdioLine, stop: ctx.Done()})
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}
