package home

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/observe"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// Options configure Open. WorkerExecutable is required; the zero value of
// every other field is the CLI's default.
type Options struct {
	// WorkerExecutable runs the sandbox worker processes: the toolhost
	// executable, or this program's own (os.Executable()) when its main
	// calls RunWorker first. Open starts them as
	// "WorkerExecutable sandbox-worker --cache DIR".
	WorkerExecutable string
	// Workers is the number of worker processes kept running (up to
	// worker.MaxPoolWorkers); 0 means 2.
	Workers int
	// MemoryBudgetBytes bounds the resident memory of all worker processes
	// together (worker.Options.MemoryBudgetBytes); 0 means
	// worker.DefaultMemoryBudget.
	MemoryBudgetBytes int64
	// ServeControl serves the home's control socket while the home is
	// open, as `toolhost serve` and `toolhost mcp` do: the other toolhost
	// commands of this home (install, policy, approvals approve, …) work
	// through this process, and a call whose policy is ask waits for an
	// operator's decision there until ApprovalTimeout. Without it, such a
	// call is denied at once, saying so, as `toolhost call` does when no
	// serve runs.
	ServeControl bool
	// ApprovalTimeout bounds an ask; 0 means govern.DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// LogArguments keeps argument values in audit records (serve
	// --log-arguments); by default a record holds their sha256 only.
	LogArguments bool
	// AllowUnsigned loads plugins that fail the trust policy, for plugin
	// development only (--dev-allow-unsigned).
	AllowUnsigned bool
	// AllowPrivateNetwork lets plugins reach their granted hosts at
	// loopback, private or link-local addresses.
	AllowPrivateNetwork bool
	// Admission limits (host.Options); 0 means the host's defaults.
	MaxInFlight, MaxInFlightPerPlugin, MaxQueued int
	// Observers see every call after the metrics and before the audit
	// record (a call log, say).
	Observers []host.CallObserver
	Logger    *slog.Logger
}

// Home is an open toolhost home: its store held by this process, its
// host, audit log and Governor. Every call through it (Call, or Host's)
// takes the whole pipeline. Close must be called.
type Home struct {
	dir     string
	st      *store.Store
	gv      *governance
	h       *host.Host
	engine  engine.Engine
	metrics *observe.Metrics
	log     *slog.Logger
	// stopControl stops serving the control socket (nil without
	// Options.ServeControl).
	stopControl func()
}

// Open opens the toolhost home dir (made 0700 if missing) as `toolhost
// serve` and `toolhost call` do when no serve holds it: it refuses a home
// others can write (ErrNotPrivate), takes the store's lock
// (store.ErrLocked while another process holds it: reach that one with
// control.Dial), re-verifies and quarantines what the store holds,
// replays and checks the audit log and records the changes it missed,
// loads the approval policy and hooks, and starts the sandbox worker
// processes.
func Open(ctx context.Context, dir string, opts Options) (*Home, error) {
	if opts.WorkerExecutable == "" {
		return nil, errors.New("home: Options.WorkerExecutable is empty: set it to the path of the toolhost executable, or to os.Executable() of a program whose main calls home.RunWorker first; tools run in those worker processes, never in this one")
	}
	if opts.ApprovalTimeout < 0 {
		return nil, fmt.Errorf("home: Options.ApprovalTimeout %s is negative: use a positive duration, or 0 for %s", opts.ApprovalTimeout, govern.DefaultApprovalTimeout)
	}
	if opts.ApprovalTimeout == 0 {
		opts.ApprovalTimeout = govern.DefaultApprovalTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := CheckPrivate(dir, log); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, control.SocketName)
	if opts.ServeControl {
		if c, err := control.Dial(ctx, sock); err == nil {
			c.Close()
			// The store is in use as surely as when badger's lock says so.
			return nil, fmt.Errorf("%w: a toolhost serve or mcp already serves this home (%s) on %s; stop it first, or reach it with control.Dial", store.ErrLocked, dir, sock)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create home %s: %w", dir, err)
	}
	hm := &Home{dir: dir, log: log}
	if err := hm.open(ctx, opts); err != nil {
		return nil, err
	}
	if opts.ServeControl {
		if err := hm.serveControl(sock); err != nil {
			hm.Close()
			return nil, err
		}
	}
	return hm, nil
}

// open opens the store, the audit log and Governor, the engine and the
// host, in that order; on error it closes what it opened.
func (hm *Home) open(ctx context.Context, opts Options) (err error) {
	storeDir := filepath.Join(hm.dir, "store")
	kept, err := auditLogBeforeStore(hm.AuditPath(), storeDir)
	if err != nil {
		return err
	}
	if hm.st, err = store.Open(storeDir, hm.log); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			hm.Close()
		}
	}()
	if hm.gv, err = openGovernance(hm.AuditPath(), hm.st, kept, &opts, hm.log); err != nil {
		return err
	}
	if hm.engine, err = newEngine(ctx, hm.dir, opts, hm.log); err != nil {
		return err
	}
	hm.metrics = observe.NewMetrics()
	observers := append([]host.CallObserver{hm.metrics}, opts.Observers...)
	hm.h, err = host.New(host.Options{
		Store: hm.st, Engine: hm.engine, Logger: hm.log, AllowUnsigned: opts.AllowUnsigned, AllowPrivateNetwork: opts.AllowPrivateNetwork,
		MaxInFlight: opts.MaxInFlight, MaxInFlightPerPlugin: opts.MaxInFlightPerPlugin, MaxQueued: opts.MaxQueued,
		Observers: append(observers, hm.gv.rec),
		Governor:  hm.gv.gov,
	})
	if err != nil {
		return err
	}
	hm.gv.h = hm.h
	hm.gv.log.Group(hm.h.InCalls, auditGroupDelay)
	hm.metrics.TrackLoad(hm.h)
	if err := hm.metrics.Registry().Register(hm.gv.gov.Collector()); err != nil {
		return fmt.Errorf("home: governance metrics: %w", err)
	}
	return nil
}

// serveControl serves the control socket at sock until Close, so that
// the other toolhost commands of this home work through this process.
func (hm *Home) serveControl(sock string) error {
	ln, err := control.Listen(sock)
	if err != nil {
		return err
	}
	cctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := control.Serve(cctx, ln, hm.Manage("cli"), hm.h, hm.log); err != nil {
			hm.log.Error("control socket stopped", "err", err)
		}
	}()
	hm.stopControl = func() { stop(); <-done }
	return nil
}

// Call calls tool with args (a JSON object) through the whole pipeline:
// admission, argument validation, policy, hooks and approval, the
// sandbox, after-hooks, metrics and the audit record, made durable
// before Call returns. A ctx not labelled with host.WithEntry is the Go
// API's call (entry "go"). Errors are *toolerr.Error.
func (hm *Home) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	return hm.h.Call(ctx, tool, args)
}

// Tools lists the tools of the available plugins, sorted by name.
func (hm *Home) Tools() []host.ToolInfo { return hm.h.Tools() }

// Host is the governed, audited host (the HTTP API and MCP adapters
// serve it). Make changes through Manage, which records them.
func (hm *Home) Host() *host.Host { return hm.h }

// Manage is the home's management API (install, remove, trust, policy,
// approvals), each change recorded in the audit log with actor before it
// is reported.
func (hm *Home) Manage(actor string) *control.Governed {
	return &control.Governed{API: control.Local{H: hm.h}, H: hm.h, Gov: hm.gv.gov, Audit: hm.gv.rec, Actor: actor}
}

// Governor is the home's approval policy, hooks and pending approvals.
func (hm *Home) Governor() *govern.Governor { return hm.gv.gov }

// Metrics counts the home's calls by tool, entry point and outcome.
func (hm *Home) Metrics() *observe.Metrics { return hm.metrics }

// Dir is the home's directory (absolute).
func (hm *Home) Dir() string { return hm.dir }

// AuditPath is the home's audit log.
func (hm *Home) AuditPath() string { return filepath.Join(hm.dir, audit.FileName) }

// closeRecordWait bounds how long Close waits for the calls that are
// writing their audit records (an fsync each, shared).
const closeRecordWait = 5 * time.Second

// Close stops serving the control socket, ends the calls waiting for
// approval (busy: they did not run), waits for running calls and their
// records, then stops the workers and closes the audit log and the
// store. It returns the store's close error.
func (hm *Home) Close() error {
	if hm.stopControl != nil {
		hm.stopControl()
	}
	if hm.h != nil {
		hm.gv.gov.Approvals().Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(plugin.MaxTimeoutMS)*time.Millisecond+5*time.Second)
		if err := hm.h.WaitIdle(ctx); err != nil {
			hm.log.Error("closing the home: calls still running", "err", err)
		}
		cancel()
		hm.h.Close()
		// A call past its sandbox has left admission but may still be
		// writing its audit record (InCalls counts it until its observers
		// return): the log closes after it, or its answer would be
		// withheld for a record the closing log refused.
		for deadline := time.Now().Add(closeRecordWait); hm.h.InCalls() > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	if hm.engine != nil {
		hm.engine.Close(context.Background())
	}
	if hm.gv != nil {
		_ = hm.gv.log.Close() // the log is fsync'd after every record; nothing is lost
	}
	if hm.st == nil {
		return nil
	}
	if err := hm.st.Close(); err != nil {
		hm.log.Error("closing the store", "err", err)
		return err
	}
	return nil
}
