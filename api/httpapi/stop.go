package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/toolhost/toolhost/api/mcpserver"
)

// Stop ends srv, the server of this API, at shutdown, and returns once
// every request handler of the API has returned (or ctx ends): its caller
// closes the host and the audit log next.
//
// It stops srv gracefully (http.Server.Shutdown: no new connections, the
// handlers in flight finish) while tool calls run, however long they
// take. Once no call of this API runs, what a handler has left is writing
// its answer, which is already recorded; a client that does not read its
// answer would hold that write — and the shutdown — until the server's
// write timeout, minutes. So AnswerGrace after the last call (the same
// grace /mcp answers get), the connections still open are closed, and
// their handlers, whose reads and writes then fail at once, are waited
// for. Run api.Shutdown beside it: it ends the MCP sessions, whose GET
// streams would otherwise keep the graceful stop waiting for the grace.
func (a *API) Stop(ctx context.Context, srv *http.Server) error {
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Shutdown(ctx) }()
	callsEnded := make(chan struct{})
	go func() { _ = a.running.waitIdle(ctx); close(callsEnded) }()
	select {
	case err := <-stopped:
		return serverStopErr(err)
	case <-callsEnded:
	}
	grace := time.NewTimer(AnswerGrace)
	defer grace.Stop()
	select {
	case err := <-stopped:
		return serverStopErr(err)
	case <-grace.C:
	case <-ctx.Done():
	}
	n := a.handlers.count()
	a.log.Warn("shutting down: requests still open after the last call ended and the grace passed (clients that do not read their answers, or send their bodies slowly); closing their connections",
		"requests", n, "grace", AnswerGrace)
	_ = srv.Close() // the graceful stop's goroutine returns at its next poll
	if err := a.handlers.waitIdle(ctx); err != nil {
		return errors.New("httpapi: request handlers still running after their connections were closed at shutdown")
	}
	return nil
}

// AnswerGrace is how long Stop lets answers be written after the last
// call ended before it closes the connections of the clients that do not
// read them.
const AnswerGrace = mcpserver.AnswerGrace

func serverStopErr(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
