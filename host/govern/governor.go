package govern

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/strictjson"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// ChangeRecorder records changes durably (the audit log's Recorder).
type ChangeRecorder interface {
	// Change records a change the store did not make (an approval).
	Change(action, subject, detail, actor string) error
	// Journaled makes a change to the store with change and records it,
	// with the store's journal number of the change, before it returns
	// (audit.Recorder.Journaled).
	Journaled(actor string, change func() (action, subject, detail string, err error)) error
}

// Options configure a Governor.
type Options struct {
	// Store holds the approval policy rules. Required.
	Store *store.Store
	// Hooks lists the installed policy plugins' hooks; nil means none.
	Hooks HookSource
	// ApprovalTimeout bounds an "ask"; 0 means DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// NoApprover says nobody can answer an "ask" here (a one-shot process
	// that serves no control socket): such calls are denied at once, with
	// a message that says where they can be approved.
	NoApprover bool
	// Audit records policy changes and approval decisions; nil records
	// nothing. When it also has Err() error (audit.Recorder), every call
	// is refused before it runs while Err is not nil: the log can no
	// longer record it.
	Audit  ChangeRecorder
	Logger *slog.Logger
}

// Governor is the host.Governor of toolhost: approval policy, hooks and
// approvals. The order for one call: a policy deny refuses at once; then
// before_call hooks run (any deny refuses; rewrites chain); then an "ask"
// waits for a person, who sees the arguments the tool will get.
type Governor struct {
	opts      Options
	approvals *Approvals
	metrics   *govMetrics
	// logErr is opts.Audit when it says why the log refuses records
	// (audit.Recorder), found once here rather than on every call.
	logErr interface{ Err() error }

	mu    sync.RWMutex
	rules []store.PolicyRule

	schemaMu sync.Mutex
	schemas  map[string]*plugin.Schema // digest/tool → compiled output schema
}

var _ host.Governor = (*Governor)(nil)

// New loads the policy rules from the store.
func New(opts Options) (*Governor, error) {
	if opts.Store == nil {
		return nil, errors.New("govern: Options.Store is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	rules, err := opts.Store.PolicyRules()
	if err != nil {
		return nil, fmt.Errorf("govern: read the approval policy: %w", err)
	}
	g := &Governor{opts: opts, rules: rules, metrics: newGovMetrics(), schemas: map[string]*plugin.Schema{}}
	g.approvals = &Approvals{Timeout: opts.ApprovalTimeout, OnDecide: g.recordDecision}
	g.logErr, _ = opts.Audit.(interface{ Err() error })
	return g, nil
}

// Approvals is the set of calls waiting for a person.
func (g *Governor) Approvals() *Approvals { return g.approvals }

// Collector exports the governance metrics: calls by decision, approval
// wait time.
func (g *Governor) Collector() prometheus.Collector { return g.metrics }

func (g *Governor) recordDecision(p Pending, a Answer) {
	action := "approval_deny"
	if a.Approve {
		action = "approval_approve"
	}
	if g.opts.Audit != nil {
		detail := fmt.Sprintf("approval %s of %s call", p.ID, p.Entry)
		if a.Via != "" {
			detail += ", decided over " + a.Via
		}
		if a.Reason != "" {
			detail += ": " + a.Reason
		}
		if err := g.opts.Audit.Change(action, p.Tool, detail, a.By); err != nil {
			g.opts.Logger.Error("approval decision not audited", "id", p.ID, "err", err)
		}
	}
}

func denied(v host.Verdict, format string, args ...any) (host.Verdict, error) {
	v.Decision = "denied"
	return v, toolerr.Errorf(toolerr.CodeDenied, format, args...)
}

// BeforeCall decides a call. A refusal is a *toolerr.Error with code
// denied, returned together with the Verdict that says who decided.
func (g *Governor) BeforeCall(ctx context.Context, c *host.CallInfo) (host.Verdict, error) {
	v, err := g.beforeCall(ctx, c)
	switch {
	case err == nil:
		g.metrics.decisions.WithLabelValues(v.Decision).Inc()
	case toolerr.CodeOf(err) == toolerr.CodeDenied:
		g.metrics.decisions.WithLabelValues("denied").Inc()
	}
	return v, err
}

func (g *Governor) beforeCall(ctx context.Context, c *host.CallInfo) (host.Verdict, error) {
	if g.logErr != nil {
		if err := g.logErr.Err(); err != nil {
			v := host.Verdict{Decision: "denied", DecidedBy: "toolhost"}
			return v, toolerr.Errorf(toolerr.CodeInternal, "%s was not run: toolhost records every call in its audit log before answering, and the log takes no more records (%v); if a write failed, fix its cause (free disk space, check the home's files) and restart toolhost", c.Tool.Name, err)
		}
	}
	eff := g.Effective(c.Tool)
	v := host.Verdict{Decision: "allowed", DecidedBy: "policy " + eff.Source}
	if eff.Action == store.PolicyDeny {
		return denied(v, "policy denies %s (%s); an operator can change it with `toolhost policy set`", c.Tool.Name, eff.Source)
	}
	args := c.Arguments
	if g.opts.Hooks != nil {
		for _, h := range hooksFor(g.opts.Hooks(), plugin.HookBeforeCall, c.Tool.Name) {
			in, _ := json.Marshal(beforeInput{Tool: c.Tool.Name, Plugin: c.Plugin, Arguments: args, Entry: string(c.Entry)})
			hv, err := g.runHook(ctx, h, in)
			if err != nil {
				v.Decision, v.DecidedBy = notAllowed(err), hookName(h)
				return v, err
			}
			if hv.deny != "" {
				v.DecidedBy = hookName(h)
				return denied(v, "%s denied %s: %s", hookName(h), c.Tool.Name, hv.deny)
			}
			if hv.arguments != nil {
				// Checked at once, as the caller's were: a later hook and
				// the person asked see only arguments the tool accepts.
				checked, err := c.Check(hv.arguments)
				if err != nil {
					v.Decision, v.DecidedBy = "denied", hookName(h)
					return v, toolerr.Errorf(toolerr.CodeDenied, "%s rewrote the arguments of %s into ones the tool does not accept (%s); the call is refused because hooks fail closed: fix or remove the policy plugin %s", hookName(h), c.Tool.Name, toolerr.As(err).Message, h.Plugin)
				}
				hv.arguments = checked
			}
			if hv.arguments != nil {
				args = hv.arguments
				v.Arguments = args
				v.DecidedBy += ", " + hookName(h) + " rewrote the arguments"
			}
		}
	}
	if eff.Action != store.PolicyAsk {
		return v, nil
	}
	if g.opts.NoApprover {
		v.DecidedBy = "policy " + eff.Source
		if c.Entry == host.EntryGo {
			// A Go program that opened the home itself (package home)
			// without serving its control socket.
			return denied(v, "%s needs a person's approval (%s), and nobody can be asked in this process: open the home with home.Options.ServeControl, so that `toolhost approvals approve ID` decides it, or call it through a running `toolhost serve` (control.Dial)", c.Tool.Name, eff.Source)
		}
		return denied(v, "%s needs a person's approval (%s), and nobody can be asked in this process: call it through a running `toolhost serve` (or `toolhost mcp`), where `toolhost approvals approve ID` or the MCP client's user decides", c.Tool.Name, eff.Source)
	}
	g.metrics.decisions.WithLabelValues("asked").Inc()
	out, err := g.approvals.Ask(ctx, Pending{Tool: c.Tool.Name, Plugin: c.Plugin, Arguments: args, Entry: string(c.Entry)})
	v.Waited = out.Waited
	g.metrics.wait.Observe(out.Waited.Seconds())
	switch {
	case errors.Is(err, ErrTooManyPending):
		v.Decision, v.DecidedBy = "denied", "toolhost"
		return v, toolerr.Errorf(toolerr.CodeBusy, "%s needs approval, but %v: decide some of them first (`toolhost approvals list`), then call again", c.Tool.Name, err)
	case errors.Is(err, ErrShuttingDown):
		v.Decision, v.DecidedBy = "denied", "toolhost"
		return v, toolerr.Errorf(toolerr.CodeBusy, "%s needs approval, but %v; the call did not run: call it again once toolhost is serving again", c.Tool.Name, err)
	case err != nil:
		v.Decision, v.DecidedBy = "cancelled", "caller"
		return v, toolerr.Errorf(toolerr.CodeCancelled, "the caller went away while %s waited for approval", c.Tool.Name)
	case out.TimedOut:
		v.DecidedBy = "timeout"
		if g.opts.Audit != nil {
			if err := g.opts.Audit.Change("approval_timeout", c.Tool.Name, fmt.Sprintf("nobody decided within %s", g.approvals.timeout()), "toolhost"); err != nil {
				g.opts.Logger.Error("approval timeout not audited", "err", err)
			}
		}
		return denied(v, "nobody approved %s within %s (%s); ask the user to approve it (`toolhost approvals approve ID` while the call waits) and call again", c.Tool.Name, g.approvals.timeout(), eff.Source)
	case !out.Approve:
		v.DecidedBy = out.By
		reason := clip.Printable(out.Reason) // a person's words, shown to the model and in terminals
		if reason == "" {
			reason = "no reason given"
		}
		return denied(v, "the %s declined this call of %s: %s; do not retry it unless the user asks", who(out.By), c.Tool.Name, reason)
	}
	// The policy may have changed while the person decided: a deny set
	// meanwhile is the operator's word on this tool too, and a person's
	// approval (maybe the caller's own, over MCP) does not override it.
	if now := g.Effective(c.Tool); now.Action == store.PolicyDeny {
		v.DecidedBy = "policy " + now.Source
		return denied(v, "policy denies %s (%s), set while the call waited for approval, so the %s's approval does not let it run; an operator can change it with `toolhost policy set`", c.Tool.Name, now.Source, who(out.By))
	}
	v.Decision, v.DecidedBy = "approved", out.By
	return v, nil
}

// notAllowed is the decision recorded for a call that a failing hook
// ended: "denied" (hooks fail closed), or "cancelled" when the call's
// caller left or its deadline passed while the hook ran — never the
// "allowed" the verdict started from.
func notAllowed(err error) string {
	if toolerr.CodeOf(err) == toolerr.CodeDenied {
		return "denied"
	}
	return "cancelled"
}

func who(by string) string {
	if by == "mcp-client" {
		return "user (asked by the MCP client)"
	}
	return "operator"
}

// AfterCall checks the result against the tool's output schema (a result
// that does not validate is a plugin_error) and runs the after_call hooks.
func (g *Governor) AfterCall(ctx context.Context, c *host.CallInfo, result json.RawMessage) (json.RawMessage, error) {
	schema, err := g.outputSchema(c)
	if err != nil {
		return nil, err
	}
	if err := checkOutput(schema, result); err != nil {
		return nil, toolerr.Errorf(toolerr.CodePluginError, "%s returned a result that does not match its output_schema: %v", c.Tool.Name, err)
	}
	if g.opts.Hooks == nil {
		return result, nil
	}
	for _, h := range hooksFor(g.opts.Hooks(), plugin.HookAfterCall, c.Tool.Name) {
		in, _ := json.Marshal(afterInput{Tool: c.Tool.Name, Plugin: c.Plugin, Arguments: c.Arguments, Result: result})
		hv, err := g.runHook(ctx, h, in)
		if err != nil {
			return nil, err
		}
		if hv.deny != "" {
			return nil, toolerr.Errorf(toolerr.CodeDenied, "%s withheld the result of %s: %s", hookName(h), c.Tool.Name, hv.deny)
		}
		if hv.result != nil {
			if err := checkOutput(schema, hv.result); err != nil {
				return nil, toolerr.Errorf(toolerr.CodeDenied, "%s rewrote the result of %s into one that does not match its output_schema (%v); the result is withheld", hookName(h), c.Tool.Name, err)
			}
			result = hv.result
		}
	}
	return result, nil
}

func checkOutput(s *plugin.Schema, result json.RawMessage) error {
	if s == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(result, &v); err != nil {
		return errors.New("it is not JSON")
	}
	return resultError(s.Validate(v))
}

// resultError names the part of a result that does not validate as the
// result's: the schema validator's own words are about arguments, and a
// plugin author reading "argument \"/deleted\"" looks in the wrong place.
func resultError(err error) error {
	var ve *plugin.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	if ve.Field == "" {
		return fmt.Errorf("the result: %s", ve.Reason)
	}
	return fmt.Errorf("result field %q: %s", strictjson.Shown(ve.Field), ve.Reason)
}

func (g *Governor) outputSchema(c *host.CallInfo) (*plugin.Schema, error) {
	if len(c.Tool.OutputSchema) == 0 {
		return nil, nil
	}
	key := c.Digest.String() + "/" + c.Tool.Name
	g.schemaMu.Lock()
	defer g.schemaMu.Unlock()
	if s, ok := g.schemas[key]; ok {
		return s, nil
	}
	s, err := plugin.CompileSchema(c.Tool.OutputSchema)
	if err != nil {
		return nil, toolerr.Errorf(toolerr.CodePluginError, "%s: output_schema does not compile: %v", c.Tool.Name, err)
	}
	if len(g.schemas) > 4096 {
		clear(g.schemas)
	}
	g.schemas[key] = s
	return s, nil
}

// runHook calls one hook; any failure refuses the call (fail closed).
func (g *Governor) runHook(ctx context.Context, h HookTarget, input []byte) (hookVerdict, error) {
	// A policy plugin's log lines and progress are not the tool's: the
	// caller's event sink is not handed to it.
	out, err := h.Call(host.WithCallEvents(ctx, nil), h.Hook.Export, input)
	if err != nil {
		if ctx.Err() != nil {
			return hookVerdict{}, toolerr.Errorf(toolerr.CodeCancelled, "the call ended while %s ran", hookName(h))
		}
		return hookVerdict{}, toolerr.Errorf(toolerr.CodeDenied, "%s failed (%v); the call is refused because hooks fail closed: fix or remove the policy plugin %s", hookName(h), err, h.Plugin)
	}
	hv, err := parseAnswer(h.Hook.Event, out)
	if err != nil {
		return hookVerdict{}, toolerr.Errorf(toolerr.CodeDenied, "%s %v; the call is refused because hooks fail closed: fix or remove the policy plugin %s", hookName(h), err, h.Plugin)
	}
	return hv, nil
}

func (a *Approvals) timeout() time.Duration {
	if a.Timeout <= 0 {
		return DefaultApprovalTimeout
	}
	return a.Timeout
}

type govMetrics struct {
	decisions *prometheus.CounterVec
	wait      prometheus.Histogram
}

func newGovMetrics() *govMetrics {
	return &govMetrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhost_call_decisions_total",
			Help: `Governed calls by decision: "allowed", "denied", "approved", and "asked" (calls that waited for a person, whatever the answer).`,
		}, []string{"decision"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolhost_approval_wait_seconds",
			Help:    "How long asked calls waited for a decision (approve, deny, timeout or caller gone).",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 12), // 0.25 s to ~8.5 min
		}),
	}
}

func (m *govMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.decisions.Describe(ch)
	m.wait.Describe(ch)
}

func (m *govMetrics) Collect(ch chan<- prometheus.Metric) {
	m.decisions.Collect(ch)
	m.wait.Collect(ch)
}
