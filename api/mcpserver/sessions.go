package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// DefaultMaxSessions bounds the 2025-11-25 sessions open at once over HTTP
// (HTTPOptions.MaxSessions). Each holds goroutines and memory until its
// client deletes it or it idles out; a client with the token that opens
// them without end must not exhaust the host.
const DefaultMaxSessions = 1024

// sessionCalls holds, per 2025-11-25 session, the cancellation of the
// calls running in it, so that ending the session (DELETE) ends them: the
// SDK's session close waits for every handler, so a call waiting for a
// person would hold the DELETE for minutes, and its caller — who deleted
// the session — is gone.
type sessionCalls struct {
	mu   sync.Mutex
	next uint64
	m    map[string]map[uint64]context.CancelFunc // session id → calls
}

// track returns ctx cancelled when session id ends, and the func that
// forgets it (call it when the call returns).
func (c *sessionCalls) track(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]map[uint64]context.CancelFunc{}
	}
	if c.m[id] == nil {
		c.m[id] = map[uint64]context.CancelFunc{}
	}
	c.next++
	key := c.next
	c.m[id][key] = cancel
	return ctx, func() {
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.m[id], key)
		if len(c.m[id]) == 0 {
			delete(c.m, id)
		}
	}
}

// end cancels every call running in session id.
func (c *sessionCalls) end(id string) {
	c.mu.Lock()
	calls := c.m[id]
	delete(c.m, id)
	c.mu.Unlock()
	for _, cancel := range calls {
		cancel()
	}
}

// endSession ends what runs in session id before the SDK closes it: its
// calls, and the calls parked in it for the user's approval (a 2025-11-25
// retry must come from the same session, so none can come now).
func (s *Server) endSession(id string) {
	s.calls.end(id)
	for _, pc := range s.parked.takeSession(id) {
		pc.cancel()
	}
}

// sessionCount is the number of sessions open (every transport).
func (s *Server) sessionCount() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// tooManySessions answers an initialize that would open a session beyond
// max: 503 with a JSON-RPC error that says what to do, under the
// initialize's id (nil: null).
func (s *Server) tooManySessions(w http.ResponseWriter, max int, id json.RawMessage) bool {
	n := s.sessionCount()
	if n < max {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "60")
	if id == nil {
		id = json.RawMessage("null")
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"%d MCP sessions are open, the most this server keeps: end unused ones (DELETE /mcp with their Mcp-Session-Id), or wait for idle ones to time out (serve --mcp-session-timeout), then initialize again"}}`, id, n)
	return true
}
