//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but still part of both revisions we serve; clients that ask for lines get them

package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// The host's own log lines about a call reach MCP clients that asked for
// them (logging/setLevel): "debug" when a call starts and when it answers,
// "warning" for a denial or a limit hit, "error" when the plugin or the
// host failed. The SDK sends nothing to a session that set no level, and
// filters by the level set.

// logBurst is how many lines one session may get per logWindow; the rest
// of the window's lines are dropped, so a client looping on a failing call
// is not flooded (its results still say what went wrong).
const (
	logBurst  = 20
	logWindow = time.Second
	// maxLogSessions bounds the limiter's table; when it is full the
	// table starts afresh (a session then gets at most one extra burst).
	maxLogSessions = 4096
)

type logLimiter struct {
	burst int        // lines per window; 0 means logBurst
	mu    sync.Mutex // guards windows
	// windows maps a session to the start of its window and the lines
	// sent in it.
	windows map[*mcp.ServerSession]*logCount
}

type logCount struct {
	start time.Time
	n     int
}

func (l *logLimiter) allow(ss *mcp.ServerSession, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.windows == nil || len(l.windows) >= maxLogSessions {
		l.windows = map[*mcp.ServerSession]*logCount{}
	}
	c := l.windows[ss]
	if c == nil || now.Sub(c.start) >= logWindow {
		c = &logCount{start: now}
		l.windows[ss] = c
	}
	burst := l.burst
	if burst == 0 {
		burst = logBurst
	}
	if c.n >= burst {
		return false
	}
	c.n++
	return true
}

// callLine is the data of one log notification: what a client's log view
// shows and can filter on.
type callLine struct {
	Tool    string `json:"tool"`
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// logCall sends one of the host's lines about req's call, if its client
// asked for that level. The check comes before the rate limiter, so calls
// whose client wants no lines (most of them) cost no limiter entry.
func (s *Server) logCall(ctx context.Context, req *mcp.CallToolRequest, level mcp.LoggingLevel, line callLine) {
	ss := req.Session
	if ss == nil || hostLineLevel(level) < s.pluginLogLevel(req) || !s.logs.allow(ss, time.Now()) {
		return
	}
	// A failed send is the client's transport going away; the call's
	// answer reports that, not the log line.
	_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: "toolhost", Data: line})
}

// hostLineLevel is the plugin-line level (host.LogLevel) of a host line's
// MCP level, to compare with what the client asked for.
func hostLineLevel(level mcp.LoggingLevel) host.LogLevel {
	switch level {
	case "debug":
		return host.LogDebug
	case "info":
		return host.LogInfo
	case "warning":
		return host.LogWarn
	}
	return host.LogError
}

type callStartKey struct{}

func (s *Server) logStart(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	s.logCall(ctx, req, "debug", callLine{Tool: req.Params.Name, Message: "call started"})
	return context.WithValue(ctx, callStartKey{}, time.Now())
}

// logEnd reports how a call ended, at a level by its outcome.
func (s *Server) logEnd(ctx context.Context, req *mcp.CallToolRequest, err error) {
	took := ""
	if start, ok := ctx.Value(callStartKey{}).(time.Time); ok {
		took = fmt.Sprintf(" after %d ms", time.Since(start).Milliseconds())
	}
	line := callLine{Tool: req.Params.Name}
	if err == nil {
		line.Message = "call answered" + took
		s.logCall(ctx, req, "debug", line)
		return
	}
	var te *toolerr.Error
	if !errors.As(err, &te) {
		te = &toolerr.Error{Code: toolerr.CodeInternal, Message: err.Error()}
	}
	line.Code = string(te.Code)
	level := mcp.LoggingLevel("error")
	switch te.Code {
	case toolerr.CodeDenied, toolerr.CodePermissionDenied:
		line.Message = "call denied" + took + ": " + te.Message
		level = "warning"
	case toolerr.CodeTimeout, toolerr.CodeMemoryLimit, toolerr.CodeOutputTooLarge, toolerr.CodeBusy:
		line.Message = "call hit a limit" + took + ": " + te.Message
		level = "warning"
	case toolerr.CodeInvalidArguments, toolerr.CodeToolNotFound, toolerr.CodeCancelled:
		line.Message = "call refused" + took + ": " + te.Message
		level = "info"
	default:
		line.Message = "call failed" + took + ": " + te.Message
	}
	s.logCall(ctx, req, level, line)
}

// Plugins' own log lines (extism log_*, pdk.Log) reach a client that asked
// for lines at their level: logger is the plugin's name, data the line.
// The sandbox bounds them per call (engine bounds: 1 KiB a line, 200
// lines, 64 KiB); here a session gets at most pluginLogBurst of them per
// logWindow, and a call's lines wait in a queue of pluginLogQueue (a
// client that reads slowly loses lines, it does not slow the call).
// Before the result goes out the queue is drained, for at most
// pluginLogDrain.
const (
	pluginLogBurst = 50
	pluginLogQueue = 64
	pluginLogDrain = 250 * time.Millisecond
)

// sessionLevels remembers each session's logging/setLevel (the SDK keeps
// it to itself), so that a call knows whether its client wants plugin
// lines before it runs: without a listener the sandbox does no work for
// them.
type sessionLevels struct {
	mu     sync.Mutex // guards levels
	levels map[*mcp.ServerSession]mcp.LoggingLevel
}

func (l *sessionLevels) set(ss *mcp.ServerSession, level mcp.LoggingLevel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.levels == nil {
		l.levels = map[*mcp.ServerSession]mcp.LoggingLevel{}
	}
	if _, known := l.levels[ss]; !known {
		go func() {
			_ = ss.Wait()
			l.mu.Lock()
			delete(l.levels, ss)
			l.mu.Unlock()
		}()
	}
	l.levels[ss] = level
}

func (l *sessionLevels) get(ss *mcp.ServerSession) mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.levels[ss]
}

// trackLevels is receiving middleware that records logging/setLevel.
func (s *Server) trackLevels(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "logging/setLevel" && err == nil {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
			if ss != nil && p != nil {
				s.levels.set(ss, p.Level)
			}
		}
		return res, err
	}
}

// pluginLogLevel is the least severe plugin line the client of req wants:
// on 2026-07-28 the request's own level (_meta), else its session's.
func (s *Server) pluginLogLevel(req *mcp.CallToolRequest) host.LogLevel {
	level := s.levels.get(req.Session)
	if meta := req.Params.GetMeta(); meta != nil {
		if v, _ := meta[mcp.MetaKeyProtocolVersion].(string); v >= statelessRevision {
			l, _ := meta[mcp.MetaKeyLogLevel].(string)
			level = mcp.LoggingLevel(l)
		}
	}
	switch level {
	case "debug":
		return host.LogDebug
	case "info":
		return host.LogInfo
	case "notice", "warning":
		return host.LogWarn
	case "error":
		return host.LogError
	}
	return host.LogOff // none set, or above every plugin level
}

// mcpLevel is the MCP level of a plugin line.
func mcpLevel(l host.LogLevel) mcp.LoggingLevel {
	switch l {
	case host.LogTrace, host.LogDebug:
		return "debug"
	case host.LogInfo:
		return "info"
	case host.LogWarn:
		return "warning"
	}
	return "error"
}

// callEvents is the event sink of one call: log lines go through a
// bounded queue to the session, progress to the call's progress stream.
// Its methods never block.
type callEvents struct {
	s        *Server
	ctx      context.Context
	ss       *mcp.ServerSession
	plugin   string
	level    host.LogLevel
	progress *progressStream // nil: the client sent no progress token

	mu     sync.Mutex // guards closed and the send on lines
	closed bool
	lines  chan pluginLine
	sent   chan struct{} // closed when the sender has sent the queue
}

type pluginLine struct {
	level host.LogLevel
	text  string
}

// events returns the sink for a call, or nil when its client wants
// neither lines nor progress.
func (s *Server) events(ctx context.Context, req *mcp.CallToolRequest, progress *progressStream) *callEvents {
	level := host.LogOff
	if req.Session != nil {
		level = s.pluginLogLevel(req)
	}
	if level == host.LogOff && progress == nil {
		return nil
	}
	ev := &callEvents{s: s, ctx: ctx, ss: req.Session, plugin: s.pluginOf(req.Params.Name), level: level, progress: progress}
	if level != host.LogOff {
		ev.lines = make(chan pluginLine, pluginLogQueue)
		ev.sent = make(chan struct{})
		go ev.send()
	}
	return ev
}

func (e *callEvents) LogLevel() host.LogLevel { return e.level }

func (e *callEvents) Log(level host.LogLevel, text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.lines == nil {
		return
	}
	select {
	case e.lines <- pluginLine{level, text}:
	default: // the client reads slower than the plugin writes
	}
}

func (e *callEvents) Progress(p host.Progress) {
	if e.progress != nil {
		e.progress.report(p)
	}
}

func (e *callEvents) send() {
	defer close(e.sent)
	for l := range e.lines {
		if !e.s.pluginLogs.allow(e.ss, time.Now()) {
			continue
		}
		_ = e.ss.Log(e.ctx, &mcp.LoggingMessageParams{Level: mcpLevel(l.level), Logger: e.plugin, Data: l.text})
	}
}

// close ends the sink: lines after it are dropped; those queued are sent
// first, for at most pluginLogDrain.
func (e *callEvents) close() {
	e.mu.Lock()
	if e.closed || e.lines == nil {
		e.closed = true
		e.mu.Unlock()
		return
	}
	e.closed = true
	close(e.lines)
	e.mu.Unlock()
	t := time.NewTimer(pluginLogDrain)
	defer t.Stop()
	select {
	case <-e.sent:
	case <-t.C:
	}
}
