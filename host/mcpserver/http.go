package mcpserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// HostChecked says that the caller validates Host and Origin against the
	// operator's allow-list (httpapi does). The SDK's own check, which
	// rejects any non-loopback Host on a loopback connection, is then off,
	// so that one policy decides for /mcp and /v1 alike. Leave it false when
	// serving Handler directly.
	HostChecked bool
	// MaxBodyBytes caps a request body (413 beyond it); 0 means 1 MiB.
	MaxBodyBytes int64
	// SessionTimeout ends a session after this long without a POST from
	// its client; 0 keeps sessions until the client deletes them or the
	// process ends.
	SessionTimeout time.Duration
}

// Handler serves MCP streamable HTTP: POST for client messages, GET for the
// session's standalone SSE stream (which carries list_changed), DELETE to
// end a session. Sessions are stateful so that the GET stream exists.
//
// Server timeouts: a GET stream lives as long as the session, so Handler
// lifts the connection's read and write deadlines for it. A POST body is
// read in full under the server's ReadTimeout and then the read deadline is
// lifted, because net/http cancels a request's context when the read
// deadline passes, even after the body is read, and that would cut a long
// tool call's response stream.
func (s *Server) Handler(opts HTTPOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:                     s.log,
		DisableLocalhostProtection: opts.HostChecked,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
		SessionTimeout:             opts.SessionTimeout,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		switch r.Method {
		case http.MethodGet:
			// Errors mean the writer has no deadlines to lift (a recorder).
			_ = rc.SetReadDeadline(time.Time{})
			_ = rc.SetWriteDeadline(time.Time{})
		case http.MethodPost:
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, opts.MaxBodyBytes))
			if err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					http.Error(w, fmt.Sprintf("request body is larger than %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
					return
				}
				http.Error(w, "cannot read the request body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			_ = rc.SetReadDeadline(time.Time{})
		}
		sdk.ServeHTTP(w, r)
	})
}
