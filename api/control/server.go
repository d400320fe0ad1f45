package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
)

// SocketName is the control socket's file name inside the toolhost home.
const SocketName = "control.sock"

// maxSocketPath is the longest unix socket path Linux accepts.
const maxSocketPath = 107

// Listen creates the control socket at path (0600), replacing a stale one.
// It fails if another live process is serving there.
func Listen(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("control: socket path %s is longer than %d bytes; use a shorter --home", path, maxSocketPath)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("control: another toolhost process is already serving %s", path)
	}
	_ = os.Remove(path)
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return &sameUserListener{l.(*net.UnixListener)}, nil
}

// sameUserListener drops connections from other users.
type sameUserListener struct{ *net.UnixListener }

func (l *sameUserListener) Accept() (net.Conn, error) {
	for {
		c, err := l.UnixListener.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if peerIsSelf(c) {
			return c, nil
		}
		c.Close()
	}
}

func peerIsSelf(c *net.UnixConn) bool {
	uid, err := peerUID(c)
	return err == nil && uid == os.Getuid()
}

// Watcher reports changes of a host's tool set (*host.Host is one).
type Watcher interface {
	// Watch returns the current change generation and a channel closed at
	// the next change.
	Watch() (uint64, <-chan struct{})
}

// Serve answers API requests on l until ctx ends, and returns once the
// requests it was handling are answered (for at most shutdownGrace): its
// caller closes the host and the audit log next, and a call between its
// end and its record (one whose approval wait the shutdown ended) would
// lose both its record and its answer. Long polls of /v1/changes are
// answered at once when ctx ends rather than holding the shutdown.
func Serve(ctx context.Context, l net.Listener, api API, changes Watcher, log *slog.Logger) error {
	closing := make(chan struct{})
	srv := &http.Server{Handler: Handler(api, changes), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), closingKey{}, (<-chan struct{})(closing))
		}}
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		<-ctx.Done()
		close(closing)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-shut
	return nil
}

// maxCallBody caps a call's arguments read from the socket: above any
// host's argument limit (1 MiB by default), which judges them after.
const maxCallBody = 8 << 20

// shutdownGrace bounds how long Serve waits, once ctx ended, for the
// requests in flight. serve waits for the running calls before it stops
// Serve; what is left then is short (a record being written).
const shutdownGrace = 5 * time.Second

// closingKey is the request context value of a channel closed when Serve
// starts shutting down (nil outside Serve).
type closingKey struct{}

func closingOf(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(closingKey{}).(<-chan struct{})
	return ch
}

// Handler is the control API over HTTP. changes, when not nil, serves
// GET /v1/changes?after=GENERATION, a long poll that answers as soon as the
// generation differs from the one the client last saw.
func Handler(api API, changes Watcher) http.Handler {
	mux := http.NewServeMux()
	elicit := &elicitations{}
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			// Errors carry the partial result too (an install report
			// lists the changes that need confirmation).
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(struct {
				Result any        `json:"result,omitempty"`
				Error  *wireError `json:"error"`
			}{v, toWire(err)})
			return
		}
		_ = json.NewEncoder(w).Encode(struct {
			Result any `json:"result"`
		}{v})
	}
	bundleFrom := func(r *http.Request) (*plugin.Bundle, error) {
		return plugin.Decode(r.Body)
	}
	keyID := func(r *http.Request) (signing.KeyID, error) { return signing.ParseKeyID(r.PathValue("id")) }

	mux.HandleFunc("GET /v1/ping", func(w http.ResponseWriter, r *http.Request) { reply(w, "pong", nil) })
	mux.HandleFunc("POST /v1/install", func(w http.ResponseWriter, r *http.Request) {
		b, err := bundleFrom(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		q := r.URL.Query()
		rep, err := api.Install(r.Context(), b, host.InstallOptions{AllowDowngrade: q.Get("allow_downgrade") == "1", AcceptWidening: q.Get("accept_widening") == "1"})
		reply(w, installReportJSON{Name: rep.Name, Version: rep.Version, Digest: rep.Digest, Decision: toDecisionJSON(rep.Decision), Previous: rep.Previous, Unchanged: rep.Unchanged, SignaturesUpdated: rep.SignaturesUpdated, Changes: rep.Changes}, err)
	})
	mux.HandleFunc("POST /v1/evaluate", func(w http.ResponseWriter, r *http.Request) {
		b, err := bundleFrom(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		d, err := api.Evaluate(r.Context(), b)
		reply(w, toDecisionJSON(d), err)
	})
	mux.HandleFunc("GET /v1/plugins", func(w http.ResponseWriter, r *http.Request) {
		ps, err := api.Plugins(r.Context())
		reply(w, ps, err)
	})
	mux.HandleFunc("GET /v1/plugins/{name}", func(w http.ResponseWriter, r *http.Request) {
		p, err := api.Plugin(r.Context(), r.PathValue("name"))
		reply(w, p, err)
	})
	mux.HandleFunc("DELETE /v1/plugins/{name}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, nil, api.Remove(r.Context(), r.PathValue("name")))
	})
	mux.HandleFunc("GET /v1/tools", func(w http.ResponseWriter, r *http.Request) {
		ts, err := api.Tools(r.Context())
		reply(w, ts, err)
	})
	mux.HandleFunc("POST /v1/tools/{name}/call", func(w http.ResponseWriter, r *http.Request) {
		args, err := io.ReadAll(io.LimitReader(r.Body, maxCallBody+1))
		if err != nil {
			reply(w, nil, err)
			return
		}
		if len(args) > maxCallBody {
			// Cut at the cap, the rest could be read as other arguments
			// than the whole body (a prefix that is a document alone).
			reply(w, nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "arguments are over %d bytes, the most the control socket reads; send smaller arguments", maxCallBody))
			return
		}
		// r.Context() ends when the client disconnects (Ctrl-C on
		// `toolhost call`): the call is cancelled with it.
		entry, ok := host.ParseEntry(r.Header.Get(entryHeader))
		if !ok {
			entry = host.EntryCLI
		}
		ctx := host.WithEntry(r.Context(), entry)
		if r.Header.Get(eventsHeader) != "" || r.Header.Get(elicitHeader) == "1" {
			elicit.serveStreamedCall(ctx, w, r, api, r.PathValue("name"), args)
			return
		}
		res, err := api.Call(ctx, r.PathValue("name"), args)
		reply(w, res, err)
	})
	mux.HandleFunc("POST /v1/elicitations/{id}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, nil, elicit.serveAnswer(r))
	})
	mux.HandleFunc("GET /v1/trust", func(w http.ResponseWriter, r *http.Request) {
		ts, err := api.TrustSet(r.Context())
		reply(w, toTrustSetJSON(ts), err)
	})
	mux.HandleFunc("POST /v1/trust/keys", func(w http.ResponseWriter, r *http.Request) {
		var k trustKeyJSON
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&k); err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, nil, api.AddTrustedKey(r.Context(), k.Name, k.PublicKey))
	})
	mux.HandleFunc("DELETE /v1/trust/keys/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := keyID(r)
		if err == nil {
			err = api.RemoveTrustedKey(r.Context(), id)
		}
		reply(w, nil, err)
	})
	mux.HandleFunc("PUT /v1/trust/revoked/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := keyID(r)
		if err == nil {
			err = api.Revoke(r.Context(), id)
		}
		reply(w, nil, err)
	})
	mux.HandleFunc("DELETE /v1/trust/revoked/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := keyID(r)
		if err == nil {
			err = api.Unrevoke(r.Context(), id)
		}
		reply(w, nil, err)
	})
	mux.HandleFunc("PUT /v1/trust/threshold/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err == nil {
			err = api.SetThreshold(r.Context(), n)
		}
		reply(w, nil, err)
	})
	if gov, ok := api.(Governance); ok {
		handleGovernance(mux, gov, reply)
	}
	if set, ok := api.(Settings); ok {
		handleSettings(mux, set, reply)
	}
	mux.HandleFunc("GET /v1/changes", func(w http.ResponseWriter, r *http.Request) {
		if changes == nil {
			http.NotFound(w, r)
			return
		}
		after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		if err != nil {
			after = -1
		}
		gen, ch := changes.Watch()
		if after < 0 || uint64(after) != gen {
			reply(w, gen, nil)
			return
		}
		select {
		case <-ch:
			gen, _ = changes.Watch()
		case <-time.After(25 * time.Second):
		case <-closingOf(r.Context()): // a nil channel outside Serve: never
		case <-r.Context().Done():
			return
		}
		reply(w, gen, nil)
	})
	return mux
}
