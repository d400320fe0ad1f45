package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
)

// answering counts the HTTP requests whose stream ends with an answer the
// server owes its client: POSTs (but subscriptions/listen, which lasts as
// long as its client) and GETs that resume a call's stream. A request
// counts until its handler returns; the SDK returns from it once every
// answer on its stream is written, or once the session is closed — so
// closing the sessions while one counts would cut an answer off.
type answering struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n is 0
	// waiting, when set (tests), is called each time wait blocks.
	waiting func()
}

// owesAnswer reports whether r's stream ends with an answer: every POST
// but subscriptions/listen, in a session or not (method is the POST's
// peeked method, "" when its body is not one request), and a GET with a Last-Event-ID of a call's stream (the
// SDK names the session's own stream "", so its event IDs start with "_").
func owesAnswer(r *http.Request, method string) bool {
	switch r.Method {
	case http.MethodPost:
		return method != "subscriptions/listen"
	case http.MethodGet:
		id := r.Header.Get("Last-Event-ID")
		return id != "" && !strings.HasPrefix(id, "_")
	}
	return false
}

// track counts a request until the returned func is called.
func (a *answering) track() func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n++; a.n == 1 {
		a.idle = make(chan struct{})
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.n--; a.n == 0 {
				close(a.idle)
			}
		})
	}
}

// wait returns true once no counted request is in flight, false when ctx
// ends first.
func (a *answering) wait(ctx context.Context) bool {
	for {
		a.mu.Lock()
		n, idle, waiting := a.n, a.idle, a.waiting
		a.mu.Unlock()
		if n == 0 {
			return true
		}
		if waiting != nil {
			waiting()
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return false
		}
	}
}

// AnswerGrace bounds how long Drain waits for the answers still being
// written: what is left once no call runs is encoding and writing them,
// unless a client stops reading.
const AnswerGrace = 5 * time.Second

// Drain ends the server at shutdown without cutting off an answer: it
// waits until every HTTP request that owes its client an answer has
// written it (for at most AnswerGrace, or until ctx ends), then ends the
// sessions (their GET streams too, which would otherwise hold
// http.Server.Shutdown) and stops following the backend. Call it once no
// tool call runs: a call's end is not yet its answer on the wire, and the
// sessions' end cuts every stream still open. It returns false when
// requests were still in flight at the bound and lost their answers.
func (s *Server) Drain(ctx context.Context) bool {
	gctx, cancel := context.WithTimeout(ctx, AnswerGrace)
	defer cancel()
	answered := s.answering.wait(gctx)
	s.CloseSessions()
	s.Close()
	return answered
}
