package host

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
)

// Entry names the front end a call came through. It is recorded with every
// call (metrics, call log, audit).
type Entry string

// Entry points. Every one of them reaches the same pipeline (Host.Call).
const (
	EntryHTTP     Entry = "http"      // POST /v1/tools/{name}/call
	EntryMCPHTTP  Entry = "mcp-http"  // /mcp
	EntryMCPStdio Entry = "mcp-stdio" // toolhost mcp
	EntryCLI      Entry = "cli"       // toolhost call
	EntryGo       Entry = "go"        // the Go API, when the caller names nothing else
)

type entryKey struct{}

// WithEntry labels ctx with the front end that started a call.
func WithEntry(ctx context.Context, e Entry) context.Context {
	return context.WithValue(ctx, entryKey{}, e)
}

// EntryOf returns the entry point ctx was labelled with, EntryGo if none.
func EntryOf(ctx context.Context) Entry {
	if e, ok := LookupEntry(ctx); ok {
		return e
	}
	return EntryGo
}

// LookupEntry returns the entry point ctx was labelled with, if any.
func LookupEntry(ctx context.Context) (Entry, bool) {
	e, ok := ctx.Value(entryKey{}).(Entry)
	return e, ok && e != ""
}

// ParseEntry returns the Entry named s, if it is one.
func ParseEntry(s string) (Entry, bool) {
	switch e := Entry(s); e {
	case EntryHTTP, EntryMCPHTTP, EntryMCPStdio, EntryCLI, EntryGo:
		return e, true
	}
	return "", false
}

// CallInfo is what the pipeline knows about a call once its arguments are
// validated; a Governor sees it.
type CallInfo struct {
	Entry   Entry
	Tool    *plugin.Tool // the signed tool definition
	Plugin  string
	Version string
	Digest  signing.Digest
	// Arguments are the validated arguments JSON (a JSON object).
	Arguments json.RawMessage

	// host and ref are the pipeline's, for Check; nil in a CallInfo made
	// elsewhere. Fields rather than a closure: no allocation per call.
	host *Host
	ref  *toolRef
}

// Check validates args as the call's own arguments were validated (size,
// strict JSON, the tool's schema) and returns the bytes the tool would
// get; a Governor checks a rewrite with it before a later hook or a person
// sees it. A CallInfo the pipeline did not make has nothing to check
// against: Check returns args as they are (the pipeline checks
// Verdict.Arguments again in any case).
func (c *CallInfo) Check(args []byte) (json.RawMessage, error) {
	if c.host == nil || c.ref == nil {
		return args, nil
	}
	in, terr := c.host.arguments(c.ref, args)
	if terr != nil {
		return nil, terr
	}
	return in, nil
}

// Verdict is a Governor's answer before a call runs.
type Verdict struct {
	// Decision is recorded with the call: "allowed", "denied", "approved"
	// (after an ask), or "cancelled" (the call ended before anything
	// decided it: its caller left, or its deadline passed in a hook).
	Decision string
	// DecidedBy names what decided: "policy", "hook:PLUGIN", "operator",
	// "mcp-client", ….
	DecidedBy string
	// Arguments, when not nil, replace the call's arguments; the pipeline
	// validates them against the schema again.
	Arguments json.RawMessage
	// Waited is how long the decision waited for a person; it does not
	// count against the tool's deadline.
	Waited time.Duration
}

// Governor stands between argument validation and the sandbox (hooks,
// approval policy). BeforeCall refuses a call with a *toolerr.Error whose
// Code is toolerr.CodeDenied and whose message says who said no and why.
// AfterCall may replace the result or deny it. Both are called for every
// call of every entry point; nil Options.Governor allows everything.
type Governor interface {
	BeforeCall(ctx context.Context, c *CallInfo) (Verdict, error)
	AfterCall(ctx context.Context, c *CallInfo, result json.RawMessage) (json.RawMessage, error)
}

// CallRecord is the account of one finished call, given to every
// CallObserver (metrics, the call log, the audit log).
type CallRecord struct {
	Start    time.Time
	Duration time.Duration // admission to answer
	Queued   time.Duration // waiting for admission
	Entry    Entry
	Tool     string
	Plugin   string // "" when the tool is unknown
	Digest   signing.Digest
	// ArgumentsSHA256 is the hex sha256 of the arguments as received.
	ArgumentsSHA256 string
	// Arguments are the arguments as received. They are the user's data:
	// an observer keeps or logs them only when the operator asked for it.
	Arguments json.RawMessage
	// Waited is how long the call waited for a person to approve it (from
	// the Verdict); it is not part of the tool's deadline.
	Waited    time.Duration
	Decision  string // from the Verdict; "" when no Governor ran
	DecidedBy string
	// Outcome is "" for success, else the error code (cancelled included).
	Outcome toolerr.Code
	Message string
}

// CallObserver receives every finished call. ObserveCall runs on the call's
// path before the answer is returned (so an audit record is durable before
// the caller sees the result); it must be quick and must not block.
type CallObserver interface {
	ObserveCall(ctx context.Context, r CallRecord)
}

// A RecordKeeper is a CallObserver whose record is part of the answer: the
// audit log, whose record DESIGN.md has durable before the caller sees the
// result. Call gives it the record through KeepCall instead of
// ObserveCall; when KeepCall fails, the call has run (its effects stand)
// but its result is withheld: Call answers internal_error, saying that the
// record could not be kept and what to do.
type RecordKeeper interface {
	CallObserver
	KeepCall(ctx context.Context, r CallRecord) error
}

// CallEvents receives what the plugin reports about itself while a call
// runs: its log lines and its progress. It is engine.Events; see there
// for the bounds every engine keeps and the rules a sink must follow
// (never block; nothing arrives after the call returns).
type CallEvents = engine.Events

// WithCallEvents returns ctx carrying sink as the receiver of the plugin's
// events of the call made with it (nil: none). An entry point attaches one
// only when its client asked for logs or progress: without a sink the
// sandbox does no work for them.
func WithCallEvents(ctx context.Context, sink CallEvents) context.Context {
	return engine.WithEvents(ctx, sink)
}

// CallEventsOf returns the sink ctx carries, or nil.
func CallEventsOf(ctx context.Context) CallEvents { return engine.EventsOf(ctx) }

// Progress is a plugin's progress report (engine.Progress).
type Progress = engine.Progress

// LogLevel is the level of a plugin's log line (engine.LogLevel).
type LogLevel = engine.LogLevel

// Plugin log levels, least severe first; LogOff wants no lines.
const (
	LogTrace = engine.LogTrace
	LogDebug = engine.LogDebug
	LogInfo  = engine.LogInfo
	LogWarn  = engine.LogWarn
	LogError = engine.LogError
	LogOff   = engine.LogOff
)
