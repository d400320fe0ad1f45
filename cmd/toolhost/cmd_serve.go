package main

import (
	"context"
	"errors"
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
	"github.com/toolhost/toolhost/plugin"
)

// version is the toolhost version reported to API and MCP clients.
const version = "0.1.0"

type serveOptions struct {
	addr            string
	allowNonLocal   bool
	allowedHosts    []string
	maxInFlight     int
	maxPerPlugin    int
	allowPrivateNet bool
	logArguments    bool
	mcpSession      time.Duration
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
SIGINT/SIGTERM stop accepting requests and let running calls finish.`,
		Example: "  toolhost serve\n  toolhost serve --addr 127.0.0.1:8080\n  curl -H \"Authorization: Bearer $(cat ~/.toolhost/token)\" http://127.0.0.1:7411/v1/tools",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:7411", "listen address")
	f.BoolVar(&o.allowNonLocal, "allow-non-loopback", false, "allow listening on a non-loopback address (exposes the API to the network)")
	f.StringSliceVar(&o.allowedHosts, "allowed-host", nil, "extra Host names to accept (with --allow-non-loopback)")
	f.IntVar(&o.maxInFlight, "max-in-flight", 0, "tool calls running at once before answering busy (default 64)")
	f.IntVar(&o.maxPerPlugin, "max-in-flight-per-plugin", 0, "calls of one plugin running at once before answering busy (default 16)")
	f.BoolVar(&o.allowPrivateNet, "allow-private-network", false, "let plugins reach their granted hosts at loopback/private/link-local addresses")
	f.IntVar(&g.workers, "workers", 0, workersUsage)
	f.BoolVar(&o.logArguments, "log-arguments", false, "include each call's arguments in its log line (they are the user's data: off by default)")
	f.DurationVar(&o.mcpSession, "mcp-session-timeout", 30*time.Minute, "end an MCP (2025-11-25) session after this long without a request from its client (0: never)")
	return cmd
}

func (g *globalOptions) serve(ctx context.Context, o serveOptions) error {
	host, port, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usagef("--addr %q: %v", o.addr, err)
	}
	if ip := net.ParseIP(host); (ip == nil && host != "localhost") || (ip != nil && !ip.IsLoopback()) {
		if !o.allowNonLocal {
			return usagef("--addr %s is not a loopback address; pass --allow-non-loopback if you really mean to expose the API", o.addr)
		}
		fmt.Fprintf(g.stderr, "warning: listening on %s exposes the host API beyond this machine; anyone with the token can run tools\n", o.addr)
	}
	token, tokenSource, err := g.apiToken()
	if err != nil {
		return err
	}
	g.logger = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	g.allowPrivateNet = o.allowPrivateNet
	if o.mcpSession < 0 {
		return usagef("--mcp-session-timeout %v is negative; pass a duration such as 30m, or 0 to keep idle sessions", o.mcpSession)
	}
	g.useServerWorkers()
	local, closeHost, err := g.openLocalOwner(ctx)
	if err != nil {
		return err
	}
	defer closeHost()

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
		Token: token, AllowedHosts: allowed, MaxInFlight: o.maxInFlight, MaxInFlightPerPlugin: o.maxPerPlugin,
		Logger: g.logger, Version: version, LogArguments: o.logArguments, MCPSessionTimeout: o.mcpSession,
	})
	if err != nil {
		ln.Close()
		return err
	}
	srv := httpapi.NewServer(api, o.addr)
	srv.ErrorLog = slog.NewLogLogger(g.logger.Handler(), slog.LevelWarn)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

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
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(plugin.MaxTimeoutMS)*time.Millisecond+5*time.Second)
	defer cancel()
	// api.Shutdown waits for running calls, then ends MCP sessions, whose
	// open GET streams would otherwise keep srv.Shutdown waiting.
	go api.Shutdown(sctx)
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

const workersUsage = "sandbox worker processes (default: twice the CPUs, at least 3); one plugin uses at most all but one"

// useServerWorkers sets the worker count of a long-running host (serve, or
// mcp without a running serve) unless --workers gave one: enough that one
// slow call does not hold up the other tools.
func (g *globalOptions) useServerWorkers() {
	if g.workers <= 0 {
		g.workers = max(3, 2*runtime.NumCPU())
	}
}

// openLocalOwner opens this home's store in this process and serves the
// control socket so that other toolhost commands work through us.
func (g *globalOptions) openLocalOwner(ctx context.Context) (control.Local, func(), error) {
	sock := filepath.Join(g.home, control.SocketName)
	if c, err := control.Dial(ctx, sock); err == nil {
		c.Close()
		return control.Local{}, nil, fmt.Errorf("another toolhost process already serves this home (%s); stop it first or use another --home", g.home)
	}
	h, closeHost, err := g.openHost(ctx)
	if err != nil {
		return control.Local{}, nil, err
	}
	ln, err := control.Listen(sock)
	if err != nil {
		closeHost()
		return control.Local{}, nil, err
	}
	local := control.Local{H: h}
	cctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := control.Serve(cctx, ln, local, h, g.logger); err != nil {
			g.logger.Error("control socket stopped", "err", err)
		}
	}()
	return local, func() {
		stop()
		<-done
		closeHost()
	}, nil
}
