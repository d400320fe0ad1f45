package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/api/httpapi"
	"github.com/toolhost/toolhost/api/mcpserver"
	"github.com/toolhost/toolhost/home"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/observe"
	"github.com/toolhost/toolhost/host/watch"
	"github.com/toolhost/toolhost/internal/rawio"
	"github.com/toolhost/toolhost/plugin"
)

// version is the toolhost version reported to API and MCP clients.
const version = "0.1.0"

type serveOptions struct {
	addr            string
	allowNonLocal   bool
	insecureNoToken bool
	allowedHosts    []string
	allowPrivateNet bool
	logArguments    bool
	mcpSession      time.Duration
	watchDir        string
	// background, when set, runs beside the server on its host (the
	// watcher, the dev loop) until the returned stop is called.
	background func(ctx context.Context, hm *home.Home) (stop func(), err error)
	// wrap, when set, wraps the HTTP API's handler (the dev loop's catch-up).
	wrap func(http.Handler) http.Handler
}

func newServeCmd(g *globalOptions) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:7411]",
		Short: "Serve the host API over HTTP (JSON API, MCP at /mcp, metrics)",
		Long: `Serve the installed plugins' tools to agents: GET /v1/tools, POST
/v1/tools/{name}/call, GET /v1/plugins, /healthz, /metrics and MCP streamable
HTTP at /mcp. Every route but /healthz needs the bearer token from
$TOOLHOST_HOME/token (made on first start) or $TOOLHOST_TOKEN. Requests with a
foreign Host or Origin header are refused (DNS-rebinding defence).

While serve runs, the other toolhost commands (plugin install/remove/list,
trust …, call, mcp) work through it, and changes are visible at once.
SIGINT/SIGTERM stop accepting requests and let running calls finish; calls
waiting for approval end at once with busy (they did not run); 5 s after the
last call, connections whose clients have not read their answers are closed.

--watch DIR keeps DIR's signed bundles installed: a bundle copied in is
verified and installed (its tools callable within about a second), a newer
version upgrades — unless it grants new permissions: then it is refused with
the changes in the log and waits for ` + "`toolhost plugin install --yes`" + ` —
and a deleted bundle's plugin is removed. Bad bundles are refused with the
reason in the log; everything else keeps serving.`,
		Example: "  toolhost serve\n  toolhost serve --watch /srv/toolhost/plugins\n  toolhost serve --addr 127.0.0.1:8080\n  curl -H \"Authorization: Bearer $(cat ~/.toolhost/token)\" http://127.0.0.1:7411/v1/tools",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.validateServeLimits(); err != nil {
				return err
			}
			longRunning()
			if o.watchDir != "" {
				o.background = func(ctx context.Context, hm *home.Home) (func(), error) { return g.startWatch(ctx, hm, o.watchDir) }
			}
			return g.serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:7411", "listen address")
	f.BoolVar(&o.allowNonLocal, "allow-non-loopback", false, "allow listening on a non-loopback address (exposes the API to the network)")
	f.StringSliceVar(&o.allowedHosts, "allowed-host", nil, "extra Host names to accept (with --allow-non-loopback)")
	f.BoolVar(&o.insecureNoToken, "insecure-no-token", false, "serve the API WITHOUT the bearer token, for test clients that cannot send headers (e.g. the MCP conformance suite); loopback addresses only: every local process can then call the tools")
	f.IntVar(&g.admission.maxInFlight, "max-in-flight", host.DefaultMaxInFlight, maxInFlightUsage)
	f.IntVar(&g.admission.maxPerPlugin, "max-in-flight-per-plugin", host.DefaultMaxInFlightPerPlugin, maxPerPluginUsage)
	f.IntVar(&g.admission.maxQueued, "max-queued", host.DefaultMaxQueued, maxQueuedUsage)
	f.BoolVar(&o.allowPrivateNet, "allow-private-network", false, "let plugins reach their granted hosts at loopback/private/link-local addresses")
	f.IntVar(&g.workers, "workers", 0, workersUsage)
	f.IntVar(&g.sandboxMemoryMiB, "sandbox-memory", 0, sandboxMemoryUsage)
	f.StringVar(&o.watchDir, "watch", "", "install, upgrade and remove plugins from the signed bundles (*.plugin) in this directory")
	f.BoolVar(&o.logArguments, "log-arguments", false, "include each call's arguments in its log line and audit record (they are the user's data: off by default)")
	f.DurationVar(&g.approvalTimeout, "approval-timeout", govern.DefaultApprovalTimeout, approvalTimeoutUsage)
	f.DurationVar(&o.mcpSession, "mcp-session-timeout", 30*time.Minute, "end an MCP (2025-11-25) session after this long without a request from its client (0: never)")
	return cmd
}

func (g *globalOptions) serve(ctx context.Context, o serveOptions) error {
	host, port, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usagef("--addr %q: %v", o.addr, err)
	}
	if ip := net.ParseIP(host); (ip == nil && host != "localhost") || (ip != nil && !ip.IsLoopback()) {
		if o.insecureNoToken {
			return usagef("--insecure-no-token serves the API without authentication and is refused on %s, which is not a loopback address: use 127.0.0.1 or [::1]", o.addr)
		}
		if !o.allowNonLocal {
			return usagef("--addr %s is not a loopback address; pass --allow-non-loopback if you really mean to expose the API", o.addr)
		}
		fmt.Fprintf(g.stderr, "warning: listening on %s exposes the host API beyond this machine; anyone with the token can run tools\n", o.addr)
	}
	token, tokenSource, err := g.apiToken()
	if err != nil {
		return err
	}
	if o.insecureNoToken {
		fmt.Fprintf(g.stderr, "WARNING: --insecure-no-token: the API on %s answers WITHOUT the bearer token; every process on this machine, of any user, can list and call the tools. Use it for test instances only.\n", o.addr)
		tokenSource = "none needed (--insecure-no-token)"
	}
	// A line per call, written in batches (observe.LineBuffer); warnings,
	// errors and direct messages go out at once, in order.
	lines := observe.NewLineBuffer(g.stderr, logFlushDelay)
	defer lines.Flush()
	g.stderr = lines.Urgent()
	g.logger = slog.New(observe.FlushingHandler(slog.NewTextHandler(lines, &slog.HandlerOptions{Level: slog.LevelInfo}), lines, slog.LevelWarn))
	g.allowPrivateNet = o.allowPrivateNet
	if o.mcpSession < 0 {
		return usagef("--mcp-session-timeout %v is negative; pass a duration such as 30m, or 0 to keep idle sessions", o.mcpSession)
	}
	g.useServerWorkers()
	// The call metrics (the home's) and log watch the host's pipeline, so
	// calls from `toolhost call` and `toolhost mcp` through the control
	// socket are counted and logged like HTTP ones.
	g.observers = append(g.observers, observe.CallLog{Log: g.logger, Arguments: o.logArguments})
	g.logArguments = o.logArguments
	hm, err := g.openHome(ctx, true)
	if err != nil {
		return err
	}
	defer hm.Close()
	local := control.Local{H: hm.Host()}
	metrics, gov := hm.Metrics(), hm.Governor()
	if o.background != nil {
		stop, err := o.background(ctx, hm)
		if err != nil {
			return err
		}
		defer stop()
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	allowed, _ := httpapi.LoopbackHosts(net.JoinHostPort(host, port))
	if _, p, _ := net.SplitHostPort(ln.Addr().String()); p != port { // --addr with port 0
		allowed, _ = httpapi.LoopbackHosts(ln.Addr().String())
	}
	if o.allowNonLocal {
		allowed = append(allowed, ln.Addr().String())
		allowed = append(allowed, o.allowedHosts...)
	}
	api, err := httpapi.New(local.H, httpapi.Options{
		Token: token, InsecureNoToken: o.insecureNoToken, AllowedHosts: allowed, Registry: metrics.Registry(),
		Logger: g.logger, Version: version, MCPSessionTimeout: o.mcpSession,
		Approvals: gov.Approvals(), AuditFile: hm.AuditPath(),
	})
	if err != nil {
		ln.Close()
		return err
	}
	var handler http.Handler = api
	if o.wrap != nil {
		handler = o.wrap(api)
	}
	srv := httpapi.NewServer(handler, o.addr, g.approvalTimeout)
	srv.ErrorLog = slog.NewLogLogger(g.logger.Handler(), slog.LevelWarn)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(rawio.Listener{Listener: ln}) }()

	url := "http://" + ln.Addr().String()
	fmt.Fprintf(g.stdout, "toolhost %s serving %d tools on %s\n", version, len(local.H.Tools()), url)
	fmt.Fprintf(g.stdout, "  token:   %s\n  tools:   curl -H \"Authorization: Bearer $(cat %s)\" %s/v1/tools\n  MCP:     %s/mcp (streamable HTTP), or `toolhost mcp` over stdio\n", tokenSource, filepath.Join(g.home, "token"), url, url)

	select {
	case err := <-errc:
		api.Close()
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(g.stderr, "shutting down: waiting for running calls to finish")
	// Nobody can approve once the API and the control socket close: calls
	// waiting for a person end now (busy, not run) instead of holding the
	// shutdown up until their approval timeout.
	if n := len(gov.Approvals().List()); n > 0 {
		fmt.Fprintf(g.stderr, "shutting down: %d call(s) waiting for approval end without running\n", n)
	}
	gov.Approvals().Close()
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(plugin.MaxTimeoutMS)*time.Millisecond+5*time.Second)
	defer cancel()
	// api.Shutdown waits for running calls and for their answers to be
	// written to /mcp clients, then ends MCP sessions, whose open GET
	// streams would otherwise keep the server's stop waiting. api.Stop
	// stops the server, closing the connections of clients that do not
	// read their answers a grace after the last call.
	drained := make(chan error, 1)
	go func() { drained <- api.Shutdown(sctx) }()
	if err := api.Stop(sctx, srv); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	// Every HTTP handler has returned by now, so what is left of
	// api.Shutdown is ending the sessions; the SDK's session Close waits
	// for requests it has not yet registered, so bound the wait rather
	// than hang the exit on it.
	select {
	case err := <-drained:
		if err != nil {
			g.logger.Warn("shutting down", "err", err)
		}
	case <-time.After(mcpserver.AnswerGrace):
		g.logger.Warn("shutting down: the MCP sessions did not end within the grace; exiting without them", "grace", mcpserver.AnswerGrace)
	case <-sctx.Done():
	}
	// Calls that came through the control socket (toolhost call, an
	// attached toolhost mcp) finish too before the host closes.
	if err := local.H.WaitIdle(sctx); err != nil {
		return fmt.Errorf("shutdown: calls still running: %w", err)
	}
	return nil
}

// logFlushDelay is how long serve's per-call log lines may wait to be
// written with the ones after them.
const logFlushDelay = 20 * time.Millisecond

// useServerWorkers sets the worker count of a long-running host (serve, or
// mcp without a running serve) unless --workers gave one: enough that one
// slow call does not hold up the other tools.
func (g *globalOptions) useServerWorkers() {
	if g.workers <= 0 {
		g.workers = max(3, 2*runtime.NumCPU())
	}
}

// startWatch runs a watcher over dir until the returned stop is called.
func (g *globalOptions) startWatch(ctx context.Context, hm *home.Home, dir string) (stop func(), err error) {
	w, err := watch.New(watch.Options{Dir: dir, Host: hm.Manage("watch"), Logger: g.logger})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx) }()
	fmt.Fprintf(g.stdout, "watching %s for signed bundles (*.plugin)\n", dir)
	return func() { cancel(); <-done }, nil
}
