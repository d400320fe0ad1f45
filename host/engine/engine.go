// Package engine is the contract between the runtime (package host) and the
// sandboxes that run plugin wasm: an Engine compiles a verified module once
// and hands out a Module whose Call runs one export under the signed limits.
//
// Implementations: sandbox.InProcess (extism/wazero in this process, used
// inside workers) and worker.Pool (supervised worker processes, what the host
// uses). Both are pinned by one conformance suite, enginetest.Run.
//
// Contract every implementation keeps:
//   - Compile prepares spec for calls, or refuses it with an *toolerr.Error
//     (invalid_module, permission_denied for a grant that cannot be opened).
//     It honours ctx: a compile whose ctx ends stops and returns.
//   - Call runs export with input as its Extism input and returns the output,
//     or an *toolerr.Error. Every call gets a fresh instance unless
//     Spec.ReuseInstances. A call never outlives its deadline: the earlier of
//     ctx's deadline and Limits.TimeoutMS (plus a short grace for killing a
//     worker). A call whose ctx is cancelled ends with cancelled within
//     ~100 ms and frees what it held.
//   - Call delivers the plugin's log lines and progress to the Events sink
//     in its ctx (WithEvents), within the bounds of events.go, and none
//     after it returns; without a sink it does no work for them.
//   - Call and Close are safe for concurrent use; Close waits for nothing
//     that could hang.
package engine

import (
	"context"
	"errors"
	"time"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// Spec is everything an engine needs to compile and run one plugin. Limits
// are already effective (defaults filled in, host clamps applied).
type Spec struct {
	// Key identifies the module (the plugin digest); engines may cache by it.
	Key         string
	Name        string
	Wasm        []byte
	Limits      plugin.Limits
	Permissions plugin.Permissions
	// Exports are the functions the manifest's tools call.
	Exports []string
	// ReuseInstances lets calls run one after another in the same instance
	// (the signed manifest's opt-in); otherwise every call gets a fresh one.
	ReuseInstances bool
	// AllowPrivateNetwork is the operator's explicit grant to reach
	// loopback, private and link-local addresses (never the plugin's).
	AllowPrivateNetwork bool
	// Config is the operator's configuration of the plugin, which the
	// plugin reads with the PDK's config functions.
	Config map[string]string
	// Secrets are the plugin's declared secrets with the operator's values
	// (Value empty: not set). An engine keeps them outside the sandbox:
	// toolhost.http_fetch adds them to the requests that ask for them, and
	// only to their hosts. Key must differ whenever Config or Secrets do.
	Secrets []Secret
}

// Secret is one secret binding with its value.
type Secret struct {
	Name   string   `json:"name"`
	Hosts  []string `json:"hosts"`
	Header string   `json:"header"`
	Prefix string   `json:"prefix,omitempty"`
	Value  string   `json:"value,omitempty"`
}

// Engine compiles modules. Implementations are safe for concurrent use.
type Engine interface {
	// Compile prepares spec for calls. It may take seconds for large modules
	// (it should use a compilation cache).
	Compile(ctx context.Context, spec Spec) (Module, error)
	Close(ctx context.Context) error
}

// Module is a compiled plugin. Call is safe for concurrent use.
type Module interface {
	// Call runs export with input and returns its output, or an
	// *toolerr.Error.
	Call(ctx context.Context, export string, input []byte) ([]byte, error)
	Close(ctx context.Context) error
}

// Finisher is a Module whose calls can leave their cleanup to after the
// caller has used the output, so that an answer does not wait for it.
type Finisher interface {
	// CallThen is Call, except that the cleanup Call does before it
	// returns (resetting the instance to its fresh state, or closing it)
	// is done by finish instead. The caller must call finish exactly once,
	// whatever the error, and soon: until then the instance serves no other
	// call, and the module cannot be closed.
	CallThen(ctx context.Context, export string, input []byte) (out []byte, finish func(), err error)
}

// Budget derives the context a call runs under: its deadline is the earlier
// of ctx's and timeoutMS from now. Everything the call does (waiting for a
// worker, loading the module, instantiating it, running it) counts against
// it.
func Budget(ctx context.Context, timeoutMS uint32) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(timeoutMS)*time.Millisecond)
}

// WithinBudget reports whether ctx already ends no later than Budget's
// would: its deadline is at most timeoutMS from now.
func WithinBudget(ctx context.Context, timeoutMS uint32) bool {
	d, ok := ctx.Deadline()
	return ok && time.Until(d) <= time.Duration(timeoutMS)*time.Millisecond
}

// Stopped is the error of a call whose ctx ended while what was still
// running: cancelled when the caller went away (context.Canceled), timeout
// when the deadline passed. It returns nil while ctx has not ended.
func Stopped(ctx context.Context, what string) *toolerr.Error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return toolerr.Errorf(toolerr.CodeTimeout, "the tool's deadline passed while %s; it was stopped", what)
	default:
		return Cancelled()
	}
}

// Cancelled is the error of a call whose caller went away.
func Cancelled() *toolerr.Error {
	return toolerr.Errorf(toolerr.CodeCancelled, "the caller went away; the call was stopped")
}

// Stats is a snapshot of an engine's capacity, for metrics.
type Stats struct {
	// Workers counts the sandboxes (worker processes) alive, Idle those
	// of them waiting for a call.
	Workers, Idle int
	// Running counts the calls holding a worker, Waiting those waiting
	// for one.
	Running, Waiting int
	// Started counts the workers started, Killed those the supervisor
	// killed (deadline, memory, cancellation, protocol, retirement),
	// Crashed those that died on their own.
	Started, Killed, Crashed uint64
}

// StatsReporter is an optional interface of an Engine that can report its
// capacity (worker.Pool does; the in-process engine has no fixed capacity).
type StatsReporter interface {
	EngineStats() Stats
}
