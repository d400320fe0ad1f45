package mcpserver

import (
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
// A GET stream lives as long as its session, so Handler lifts the
// connection's write deadline for it: an http.Server WriteTimeout would
// otherwise cut the stream, and a notification sent while the client
// reconnects would be lost. POSTs keep the server's WriteTimeout.
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
		if r.Method == http.MethodGet {
			// An error means there is no deadline to lift (a recorder).
			_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		}
		sdk.ServeHTTP(w, r)
	})
}
