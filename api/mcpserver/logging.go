package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/toolerr"
)

// The host's own log lines about a call reach MCP clients that asked for
// them (logging/setLevel): "debug" when a call starts and when it answers,
// "warning" for a denial or a limit hit, "error" when the plugin or the
// host failed. The SDK sends nothing to a session that set no level, and
// filters by the level set. Plugins' own log lines are not forwarded.

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
	mu sync.Mutex // guards windows
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
	if c.n >= logBurst {
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

func (s *Server) logCall(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel, line callLine) {
	if ss == nil || !s.logs.allow(ss, time.Now()) {
		return
	}
	// A failed send is the client's transport going away; the call's
	// answer reports that, not the log line.
	_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: "toolhost", Data: line})
}

type callStartKey struct{}

func (s *Server) logStart(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	s.logCall(ctx, req.Session, "debug", callLine{Tool: req.Params.Name, Message: "call started"})
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
		s.logCall(ctx, req.Session, "debug", line)
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
	s.logCall(ctx, req.Session, level, line)
}
