package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
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
	// SessionTimeout ends a 2025-11-25 session after this long without a
	// request from its client; 0 keeps sessions until the client deletes
	// them or the process ends. (2026-07-28 has no sessions.)
	SessionTimeout time.Duration
	// ResumeBytes bounds the memory that keeps 2025-11-25 call streams
	// for resumption (eventstore.go): a client whose SSE connection drops
	// GETs the stream again with Last-Event-ID and receives the rest of
	// the call. 0 means 32 MiB; negative turns resumption off.
	ResumeBytes int64
	// ResumeKeep is how long a call's stream stays resumable after its
	// answer was sent; 0 means 2 minutes.
	ResumeKeep time.Duration
	// MaxSessions bounds the 2025-11-25 sessions open at once; an
	// initialize beyond it gets 503. 0 means DefaultMaxSessions.
	MaxSessions int

	events *eventStore // tests: the store to use, to watch what it holds
}

// The first protocol revision without sessions (SEP-2575): every request
// carries its version, in the MCP-Protocol-Version header and in _meta.
const statelessRevision = "2026-07-28"

// Handler serves MCP streamable HTTP in both protocol eras on one URL:
//
//   - 2025-11-25 and earlier: sessions. POST initialize opens one
//     (Mcp-Session-Id), POSTs carry client messages, GET is the session's
//     standalone SSE stream (it carries list_changed), DELETE ends it.
//   - 2026-07-28: stateless. Every POST stands alone, server/discover
//     replaces initialize, subscriptions/listen is a long POST that carries
//     list_changed, and a client that goes away cancels its call.
//
// The SDK serves each era with its own handler mode (a stateful handler
// refuses 2026-07-28 with -32022, a stateless one has no sessions), so
// Handler routes each request: GET, DELETE and POSTs with a session id go
// to the stateful handler; a POST whose MCP-Protocol-Version header is
// 2026-07-28 or later, or whose body is server/discover or carries a
// protocol version in _meta, goes to the stateless one; the rest
// (initialize) opens a session. Both serve the same tools.
//
// A 2025-11-25 call's stream is resumable (eventstore.go): its events carry
// ids, and a GET with Last-Event-ID replays what the client missed and
// goes on with the call. 2026-07-28 has no resumption.
//
// Streams that live as long as their client (the GET stream,
// subscriptions/listen) have the connection's write deadline lifted: an
// http.Server WriteTimeout would otherwise cut them, and a notification
// sent while the client reconnects would be lost. Other requests keep the
// server's WriteTimeout.
func (s *Server) Handler(opts HTTPOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	server := func(*http.Request) *mcp.Server { return s.mcp }
	statefulOpts := &mcp.StreamableHTTPOptions{
		Logger:                     s.log,
		DisableLocalhostProtection: opts.HostChecked,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
		SessionTimeout:             opts.SessionTimeout,
	}
	switch {
	case opts.events != nil:
		statefulOpts.EventStore = opts.events
	case opts.ResumeBytes >= 0:
		statefulOpts.EventStore = newEventStore(opts.ResumeBytes, opts.ResumeKeep)
	}
	stateful := mcp.NewStreamableHTTPHandler(server, statefulOpts)
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		Logger:                       s.log,
		DisableLocalhostProtection:   opts.HostChecked,
		MaxRequestBodyBytes:          opts.MaxBodyBytes,
		PropagateRequestCancellation: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(host.WithEntry(r.Context(), host.EntryMCPHTTP))
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			// A session's POST may be a subscriptions/listen too (the SDK
			// serves it on 2025-11-25), which owes no answer at shutdown.
			method := ""
			if r.Method == http.MethodPost {
				peek := peekRequest(r, opts.MaxBodyBytes)
				if peek.idErr != nil {
					invalidID(w, peek.idErr)
					return
				}
				method = peek.method
			}
			if owesAnswer(r, method) {
				defer s.answering.track()()
			}
			// A GET is the session's stream or a resumed call stream: both
			// wait as long as their call.
			if r.Method == http.MethodGet {
				liftWriteDeadline(w)
			}
			if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" {
				s.endSession(id)
			}
			stateful.ServeHTTP(w, r)
			return
		}
		version := r.Header.Get("Mcp-Protocol-Version")
		peek := peekRequest(r, opts.MaxBodyBytes)
		if version != "" && !revisionRE.MatchString(version) {
			// Revisions are dates; "latest" or "v2" would otherwise be
			// routed by a string comparison and get a misleading answer.
			// The answer is the spec's UnsupportedProtocolVersionError,
			// for the request it answers (its id, the versions served and
			// the one asked for), so a client can pick another.
			unsupportedVersion(w, peek.id, version)
			return
		}
		if peek.idErr != nil {
			invalidID(w, peek.idErr)
			return
		}
		if owesAnswer(r, peek.method) {
			defer s.answering.track()()
		}
		if version >= statelessRevision || peek.method == "server/discover" || peek.metaVersion != "" {
			if peek.method == "subscriptions/listen" {
				liftWriteDeadline(w)
			}
			if peek.notification && r.Header.Get("Mcp-Method") == "" {
				// 2026-07-28 requires Mcp-Method on requests and leaves
				// notification POSTs without header rules; the SDK asks it
				// of both. The TypeScript SDK v2 sends notifications/cancelled
				// without it when it closes subscriptions/listen, so the
				// header comes from the body here (see RATIONALE.md).
				r.Header.Set("Mcp-Method", peek.method)
			}
			stateless.ServeHTTP(w, r)
			return
		}
		// An initialize: it opens a session.
		if s.tooManySessions(w, opts.MaxSessions, peek.id) {
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// unsupportedVersion answers a request whose MCP-Protocol-Version header
// is no revision with an UnsupportedProtocolVersionError (-32022, HTTP
// 400): its id (null when the body has none), the versions served and
// the one asked for, bounded.
func unsupportedVersion(w http.ResponseWriter, id json.RawMessage, version string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	requested := version
	if len(requested) > 64 {
		requested = strings.ToValidUTF8(requested[:64], "") + "…"
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error": map[string]any{
			"code":    mcp.CodeUnsupportedProtocolVersion,
			"message": fmt.Sprintf("MCP-Protocol-Version %s is not a protocol revision: send 2025-11-25 or 2026-07-28 (a date), or leave the header out on initialize", jsonQuoted(version)),
			"data":    map[string]any{"supported": mcp.SupportedProtocolVersions(), "requested": requested},
		},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

// invalidID answers a POST holding a request whose id the SDK would
// answer under another (checkRequestID): 400 with a JSON-RPC Invalid
// Request error, id null (the id sent is the one that cannot be echoed).
func invalidID(w http.ResponseWriter, err error) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": jsonrpc.CodeInvalidRequest, "message": err.Error()},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

// revisionRE is the shape of an MCP protocol revision (a date).
var revisionRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// jsonQuoted is s as a JSON string, at most 64 bytes of it.
func jsonQuoted(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func liftWriteDeadline(w http.ResponseWriter) {
	// An error means there is no deadline to lift (a recorder).
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}

// peeked is what routing needs from a POST body.
type peeked struct {
	method       string
	metaVersion  string          // _meta["io.modelcontextprotocol/protocolVersion"]
	notification bool            // a method and no id
	id           json.RawMessage // the request's id when a string or number
	idErr        error           // a request's id the SDK would answer under another
}

// peekRequest reads the body (at most max+1 bytes, so a body over the cap
// still gets the SDK's 413) and puts it back for the SDK to read. A body
// that is not one JSON-RPC request routes as a legacy one; the SDK then
// answers it.
func peekRequest(r *http.Request, max int64) peeked {
	if r.Body == nil {
		return peeked{}
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || int64(len(head)) > max {
		return peeked{}
	}
	if b := bytes.TrimSpace(head); len(b) > 0 && b[0] == '[' {
		// A batch (sessions of revisions before 2025-06-18 may send one):
		// every request in it is answered under its id.
		var batch []json.RawMessage
		if json.Unmarshal(b, &batch) == nil {
			for _, m := range batch {
				if err := checkRequestID(m); err != nil {
					return peeked{idErr: err}
				}
			}
		}
		return peeked{}
	}
	if err := checkRequestID(head); err != nil {
		return peeked{idErr: err}
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(head, &msg) != nil {
		return peeked{}
	}
	p := peeked{method: msg.Method, notification: msg.Method != "" && msg.ID == nil}
	if len(msg.ID) > 0 && (msg.ID[0] == '"' || msg.ID[0] == '-' || msg.ID[0] >= '0' && msg.ID[0] <= '9') {
		p.id = msg.ID // a JSON-RPC id is a string or a number
	}
	_ = json.Unmarshal(msg.Params.Meta[mcp.MetaKeyProtocolVersion], &p.metaVersion)
	return p
}
