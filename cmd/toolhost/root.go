package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/authoring"
	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/home"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/userfile"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// Exit codes. They are part of the CLI contract (README "Exit codes").
const (
	exitOK        = 0
	exitError     = 1 // anything not listed below
	exitUsage     = 2 // bad flags or arguments
	exitRefused   = 3 // verification or trust policy refused a plugin or key
	exitToolError = 4 // the tool ran (or was asked to run) and failed
	exitNotFound  = 5 // no such tool, plugin or key
	exitBusy      = 6 // the store is held by another process
	// exitInterrupted: Ctrl-C or SIGTERM stopped the command before it
	// finished (128 + SIGINT, as shells report it).
	exitInterrupted = 130
)

// globalOptions are the flags every command shares, and its I/O.
type globalOptions struct {
	home            string
	allowUnsigned   bool
	workers         int
	allowPrivateNet bool
	// sandboxMemoryMiB is serve's --sandbox-memory (0: the pool's default).
	sandboxMemoryMiB int
	// Set by serve: how long an "ask" waits, and whether audit records keep
	// argument values.
	approvalTimeout time.Duration
	logArguments    bool
	// admission and observers configure the host this process opens
	// (serve sets them from its flags).
	admission admissionFlags
	observers []host.CallObserver
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	logger    *slog.Logger
}

// admissionFlags bound the calls the host admits at once (host.Options).
type admissionFlags struct{ maxInFlight, maxPerPlugin, maxQueued int }

// errModuleRefused means the sandbox would refuse a bundle's module.
var errModuleRefused = errors.New("the sandbox would refuse this module")

// usageError marks errors in how a command was invoked.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// sourceError marks an error in a plugin directory being packed or built:
// the error says what to fix there, and the hints for a damaged
// downloaded bundle do not apply.
type sourceError struct{ error }

func (e sourceError) Unwrap() error { return e.error }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globalOptions{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	fmt.Fprintf(stderr, "error: %v\n", err)
	if hint := hintFor(err); hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hint)
	}
	return code
}

func newRootCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "toolhost",
		Short: "A sandboxed, signed plugin host for AI-agent tools",
		Long: `toolhost runs AI-agent tools shipped as WebAssembly plugins.

Curators review plugins and sign them; the host installs and runs only what
trusted curators signed, checks every call's arguments against the tool's
JSON Schema, and runs each call in a sandbox with a memory cap, a deadline
and nothing the signed manifest did not ask for.

Exit codes: 0 ok, 1 error, 2 usage, 3 refused by verification or trust
policy, 4 tool call failed, 5 not found, 6 store busy, 130 interrupted
(Ctrl-C, SIGTERM).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			g.logger = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			if cmd.Hidden {
				return nil // sandbox workers have no home and no environment
			}
			if g.home == "" {
				g.home = os.Getenv("TOOLHOST_HOME")
			}
			if g.home == "" {
				dir, err := os.UserHomeDir()
				if err != nil {
					return fmt.Errorf("cannot find the home directory (%v); pass --home or set TOOLHOST_HOME", err)
				}
				g.home = filepath.Join(dir, ".toolhost")
			}
			abs, err := filepath.Abs(g.home)
			if err != nil {
				return err
			}
			g.home = abs
			return home.CheckPrivate(g.home, g.logger)
		},
	}
	root.PersistentFlags().StringVar(&g.home, "home", "", "toolhost home: store, trust data, caches, API token (env TOOLHOST_HOME, default ~/.toolhost)")
	root.PersistentFlags().BoolVar(&g.allowUnsigned, "dev-allow-unsigned", false, "DEVELOPMENT ONLY: load plugins that are unsigned or not signed by trusted curators")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	curatorCmd := &cobra.Command{Use: "curator", Short: "Curator keys, review and signing"}
	curatorCmd.AddCommand(newKeygenCmd(g), newReviewCmd(g), newSignCmd(g))
	pluginCmd := &cobra.Command{Use: "plugin", Short: "Pack, verify, install and manage plugins"}
	pluginCmd.AddCommand(newPackCmd(g), newVerifyCmd(g), newInstallCmd(g), newListCmd(g), newInspectCmd(g), newRemoveCmd(g))
	pluginCmd.AddCommand(newPluginInitCmd(g), newPluginBuildCmd(g), newPluginDevCmd(g), newPluginConfigCmd(g))
	trustCmd := &cobra.Command{Use: "trust", Short: "Manage which curator keys are trusted"}
	trustCmd.AddCommand(newTrustAddCmd(g), newTrustListCmd(g), newTrustRemoveCmd(g), newTrustRevokeCmd(g), newTrustUnrevokeCmd(g), newTrustPolicyCmd(g))
	root.AddCommand(curatorCmd, pluginCmd, trustCmd, newCallCmd(g), newBenchCmd(g), newServeCmd(g), newMCPCmd(g), newWorkerCmd(g))
	root.AddCommand(newPolicyCmd(g), newApprovalsCmd(g), newAuditCmd(g), newSecretCmd(g))
	markUsageErrors(root)
	return root
}

// markUsageErrors makes argument-count errors and unknown subcommands exit
// with exitUsage.
func markUsageErrors(cmd *cobra.Command) {
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	if cmd.HasSubCommands() && cmd.RunE == nil && cmd.Run == nil {
		cmd.RunE = func(c *cobra.Command, a []string) error {
			if len(a) > 0 {
				return usagef("unknown command %q for %q", a[0], c.CommandPath())
			}
			return c.Help()
		}
		cmd.Args = func(*cobra.Command, []string) error { return nil }
	}
	for _, c := range cmd.Commands() {
		markUsageErrors(c)
	}
}

func exitCode(err error) int {
	var ue usageError
	var se *toolerr.Error
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &se):
		switch se.Code {
		case toolerr.CodeToolNotFound:
			return exitNotFound
		case toolerr.CodeUnavailable:
			return exitRefused
		}
		return exitToolError
	case errors.Is(err, store.ErrLocked):
		return exitBusy
	case errors.Is(err, host.ErrInterrupted), errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, new(*audit.BadRecordError)), errors.Is(err, audit.ErrLogMissing), errors.Is(err, audit.ErrLogDamaged):
		return exitRefused
	case errors.Is(err, host.ErrNotInstalled), errors.Is(err, store.ErrNotFound), errors.Is(err, govern.ErrNoSuchApproval):
		return exitNotFound
	case errors.Is(err, host.ErrNotAllowed), errors.Is(err, plugin.ErrInvalidBundle),
		errors.Is(err, plugin.ErrInvalidManifest), errors.Is(err, host.ErrDowngrade),
		errors.Is(err, host.ErrInvalidModule), errors.Is(err, host.ErrToolConflict),
		errors.Is(err, curator.ErrMalformedKeyFile), errors.Is(err, signing.ErrMalformedKey),
		errors.Is(err, curator.ErrWrongPassphrase), errors.Is(err, errModuleRefused),
		errors.Is(err, curator.ErrKeyFileExposed),
		errors.Is(err, host.ErrWidening), errors.Is(err, store.ErrTampered),
		errors.Is(err, control.ErrUntrustedSocket), errors.Is(err, home.ErrNotPrivate),
		errors.Is(err, authoring.ErrModule), errors.Is(err, store.ErrTrustConflict):
		return exitRefused
	}
	return exitError
}

func hintFor(err error) string {
	var ue usageError
	var bad *audit.BadRecordError
	switch {
	case errors.As(err, &ue):
		return "run the command with --help for usage"
	case errors.As(err, &bad):
		return badRecordHint(bad)
	case errors.As(err, new(sourceError)):
		return ""
	case errors.Is(err, store.ErrLocked):
		return "another toolhost process (probably `toolhost serve`) holds the store; stop it, or point --home elsewhere"
	case errors.Is(err, plugin.ErrInvalidBundle):
		return "the bundle is damaged or was modified; get a fresh copy from its publisher"
	case errors.Is(err, store.ErrTampered), errors.Is(err, store.ErrCorrupt):
		return "toolhost will not run on a store it cannot trust: restore the home from a backup, or move the store aside and re-add the trusted keys"
	case errors.Is(err, store.ErrNoSpace):
		return "the disk holding the toolhost home is (nearly) full; nothing was written"
	case errors.Is(err, control.ErrUntrustedSocket), errors.Is(err, home.ErrNotPrivate):
		return "another local user may be impersonating toolhost; nothing was sent"
	}
	return ""
}

// openAPI returns the management API of this home's host: the running
// host's over its control socket when one is serving, else a host opened
// in this process. close must be called.
func (g *globalOptions) openAPI(ctx context.Context) (control.API, func(), error) {
	sock := filepath.Join(g.home, control.SocketName)
	// Another short-lived command may hold the store for a moment: wait a
	// little for it (or for a server's socket) before giving up.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Lstat(sock); err == nil {
			c, err := control.Dial(ctx, sock)
			if err == nil {
				return c, c.Close, nil
			}
			if errors.Is(err, control.ErrUntrustedSocket) {
				return nil, nil, err
			}
		}
		hm, err := g.openHome(ctx, false)
		if err == nil {
			return hm.Manage("cli"), func() { hm.Close() }, nil
		}
		if !errors.Is(err, store.ErrLocked) || time.Now().After(deadline) || ctx.Err() != nil {
			if errors.Is(err, store.ErrLocked) {
				return nil, nil, fmt.Errorf("%w, and its control socket %s does not answer", err, sock)
			}
			return nil, nil, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openHome opens the home's store and host in this process (package
// home), with the workers of this executable's hidden sandbox-worker
// command. serveControl serves the control socket while it is open (serve,
// mcp): only then can a call wait for an operator's approval. Close must
// be called.
func (g *globalOptions) openHome(ctx context.Context, serveControl bool) (*home.Home, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find the toolhost executable to start sandbox workers: %w", err)
	}
	workers := g.workers
	if workers <= 0 {
		// A one-shot command runs one call at a time.
		workers = 1
	}
	return home.Open(ctx, g.home, home.Options{
		WorkerExecutable: exe, Workers: workers, MemoryBudgetBytes: int64(g.sandboxMemoryMiB) << 20, ServeControl: serveControl, ApprovalTimeout: g.approvalTimeout,
		LogArguments: g.logArguments, AllowUnsigned: g.allowUnsigned, AllowPrivateNetwork: g.allowPrivateNet,
		MaxInFlight: g.admission.maxInFlight, MaxInFlightPerPlugin: g.admission.maxPerPlugin, MaxQueued: g.admission.maxQueued,
		Observers: g.observers, Logger: g.logger,
	})
}

// readBundle reads and decodes the bundle file a user named. It does not
// wait on a named pipe or device (userfile.Open); a link to a bundle is
// followed.
func readBundle(path string) (*plugin.Bundle, error) {
	f, _, err := userfile.Open(path)
	if err != nil {
		return nil, bundlePathError(err)
	}
	defer f.Close()
	b, err := plugin.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// bundlePathError says what to give instead of a path that is not a
// bundle file.
func bundlePathError(err error) error {
	if errors.As(err, new(*userfile.NotRegularError)) {
		return fmt.Errorf("%w: give the path of a .plugin bundle (made by `toolhost plugin pack`)", err)
	}
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// longRunning is called by the commands that run until stopped (serve,
// mcp); main sets it to ignoreBrokenPipe. A no-op in tests that run
// commands in their own process.
var longRunning = func() {}

// badRecordHint says what to do about a log that `audit verify` (or
// `audit head`) found broken: whatever the damage, the chain up to the
// named line holds, and the file is evidence of what happened to it.
func badRecordHint(bad *audit.BadRecordError) string {
	before := "the audit log was changed outside toolhost"
	if bad.Line > 1 {
		before = fmt.Sprintf("the records before line %d are intact; from there on the log was changed outside toolhost", bad.Line)
	}
	return before + ": keep audit.jsonl and audit.jsonl.wal as they are (evidence), compare the log with a copy you shipped or backed up to see what changed, and restore both from that backup; or, to begin a new log knowingly, move both aside and create an empty audit.jsonl (its first record will say it began empty)"
}
