package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/clip"
)

// Call runs one tool call through the pipeline every entry point shares:
//
//	admission → argument validation → Governor.BeforeCall → sandbox →
//	Governor.AfterCall → a CallRecord to every observer → answer
//
// The tool's deadline (its signed timeout_ms) starts when the call arrives:
// queue wait, validation, module load and instantiation count against it;
// only the time a Governor waited for a person (Verdict.Waited) is added.
// A call whose ctx is cancelled ends with cancelled. The result is the
// tool's output when it is JSON, else the output as a JSON string.
// Failures are *toolerr.Error values. The entry point is EntryOf(ctx).
func (h *Host) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	h.calls.Add(1)
	defer h.calls.Add(-1)
	start := time.Now()
	sum := sha256.Sum256(args)
	rec := CallRecord{
		Start: start, Entry: EntryOf(ctx), Tool: tool,
		ArgumentsSHA256: hex.EncodeToString(sum[:]), Arguments: args,
	}
	res, terr := h.call(ctx, &rec, args)
	rec.Duration = time.Since(start)
	var err error
	if terr != nil {
		if errors.Is(ctx.Err(), context.Canceled) && terr.Code != toolerr.CodeCancelled {
			// The caller left: whatever the sandbox said while it was
			// being stopped, the call was cancelled.
			terr = toolerr.Errorf(toolerr.CodeCancelled, "the caller cancelled the call (%s)", terr.Message)
		}
		rec.Outcome, rec.Message, err = terr.Code, terr.Message, terr
	}
	if kerr := h.observe(ctx, rec); kerr != nil {
		return nil, toolerr.Errorf(toolerr.CodeInternal, "tool %q ran, but its audit record could not be made durable (%v), so its answer is withheld: toolhost answers a call only once its record is kept; fix what that names (a full disk: free space, then restart toolhost), and since the call did run, check its effects before calling again", rec.Tool, kerr)
	}
	return res, err
}

// observe hands a finished call's record to every observer and returns
// the first error of a RecordKeeper (nil when each kept it). Observers
// record even a cancelled call, so they must not see the caller's
// cancellation.
func (h *Host) observe(ctx context.Context, rec CallRecord) error {
	octx := context.WithoutCancel(ctx)
	var first error
	for _, o := range h.opts.Observers {
		k, ok := o.(RecordKeeper)
		if !ok {
			o.ObserveCall(octx, rec)
			continue
		}
		if err := k.KeepCall(octx, rec); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// call is the pipeline proper; it fills rec as it learns.
func (h *Host) call(ctx context.Context, rec *CallRecord, args []byte) (json.RawMessage, *toolerr.Error) {
	h.mu.RLock()
	ref, ok := h.tools[rec.Tool]
	h.mu.RUnlock()
	if h.closed.Load() {
		// Not tool_not_found: the tool may well be installed; this host
		// is no longer serving it.
		rec.Tool = recordedName(rec.Tool)
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "tool %q cannot run: the host serving it is closed (it is shutting down, or its program closed it); call again once it serves again", rec.Tool)
	}
	if !ok {
		err := h.quarantinedToolError(rec.Tool)
		if err == nil {
			err = NoSuchToolError(rec.Tool)
		}
		rec.Tool = recordedName(rec.Tool)
		return nil, err
	}
	l := ref.plugin
	rec.Plugin, rec.Digest = l.name, l.digest
	if err := l.available(h.opts.Now(), h.opts.AllowUnsigned); err != nil {
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "tool %q cannot run: plugin %s: %v", rec.Tool, l.name, err)
	}

	// The deadline runs from arrival.
	timeout := time.Duration(l.manifest.Limits.Effective().TimeoutMS) * time.Millisecond
	deadline := rec.Start.Add(timeout)
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	callCtx, cancel := context.WithDeadline(ctx, deadline)
	cancels = append(cancels, cancel)

	release, err := h.adm.admit(callCtx, l.name, false)
	rec.Queued = time.Since(rec.Start)
	if err != nil {
		return nil, refusal(err, ctx, l.name, rec.Queued, h.adm)
	}
	defer func() { release() }()

	input, terr := h.arguments(ref, args)
	if terr != nil {
		return nil, terr
	}
	info := &CallInfo{Entry: rec.Entry, Tool: ref.tool, Plugin: l.name, Version: l.manifest.Version, Digest: l.digest, Arguments: input,
		host: h, ref: ref}

	if gov := h.governor(); gov != nil {
		// The slot is given back while the Governor decides: an approval
		// may wait minutes for a person and must not hold capacity others
		// need. The Governor sees the caller's ctx, not the tool's
		// deadline, which does not run while a person decides.
		release()
		v, err := gov.BeforeCall(ctx, info)
		rec.Decision, rec.DecidedBy, rec.Waited = v.Decision, v.DecidedBy, v.Waited
		if err != nil {
			return nil, toolerr.As(err)
		}
		// The decision may have taken minutes (a person), and the
		// plugin may have been removed, replaced or revoked meanwhile:
		// it was made for the plugin the call found, so only that one,
		// still allowed to run, runs it.
		if l, terr = h.stillServed(ref, rec.Tool); terr != nil {
			return nil, terr
		}
		if v.Arguments != nil {
			if input, terr = h.arguments(ref, v.Arguments); terr != nil {
				return nil, toolerr.Errorf(terr.Code, "the arguments as rewritten by %s: %s", v.DecidedBy, terr.Message)
			}
			info.Arguments = input
		}
		if v.Waited > 0 {
			deadline = deadline.Add(v.Waited)
			callCtx, cancel = context.WithDeadline(ctx, deadline)
			cancels = append(cancels, cancel)
		}
		queuedFrom := time.Now()
		release, err = h.adm.admit(callCtx, l.name, true)
		rec.Queued += time.Since(queuedFrom)
		if err != nil {
			release = func() {}
			return nil, refusal(err, ctx, l.name, rec.Queued, h.adm)
		}
	}

	mod, terr := l.module(callCtx, h.opts.Engine, h.opts.AllowPrivateNetwork)
	if terr != nil {
		return nil, terr
	}
	out, err := mod.Call(callCtx, ref.tool.Export, input)
	if err != nil {
		return nil, engineError(err, ctx, callCtx, timeout)
	}
	res := resultJSON(out)
	if gov := h.governor(); gov != nil {
		res, err = gov.AfterCall(ctx, info, res)
		if err != nil {
			return nil, toolerr.As(err)
		}
	}
	return res, nil
}

// stillServed returns the plugin serving tool now when it is the one ref
// was found in (same digest) and it may run; a Governor's decision, which
// may wait for a person, was made for that plugin. The returned plugin is
// the current one, holding the compiled module: the one ref holds was
// unloaded by a reload meanwhile and would compile its module again.
func (h *Host) stillServed(ref *toolRef, tool string) (*loaded, *toolerr.Error) {
	old := ref.plugin
	h.mu.RLock()
	cur, ok := h.tools[tool]
	h.mu.RUnlock()
	if h.closed.Load() {
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "tool %q did not run: the host serving it closed while the call was being decided; call again once it serves again", tool)
	}
	if !ok || cur.plugin.name != old.name || !cur.plugin.digest.Equal(old.digest) {
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "tool %q did not run: plugin %s was removed or replaced (upgraded or reinstalled) while the call was being decided (waiting for approval or a hook), so what was decided is not what would run; call it again if it is still wanted", tool, old.name)
	}
	if err := cur.plugin.available(h.opts.Now(), h.opts.AllowUnsigned); err != nil {
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "tool %q did not run: plugin %s can no longer run (%v), which changed while the call was being decided", tool, old.name, err)
	}
	return cur.plugin, nil
}

// engineError types an error from the engine, which should already be an
// *toolerr.Error; anything else is classified by what ended the call.
func engineError(err error, caller, call context.Context, timeout time.Duration) *toolerr.Error {
	var te *toolerr.Error
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(caller.Err(), context.Canceled):
		return toolerr.Errorf(toolerr.CodeCancelled, "the caller cancelled the call")
	case call.Err() != nil:
		return toolerr.Errorf(toolerr.CodeTimeout, "the call did not finish within its deadline of %v", timeout)
	}
	return toolerr.Errorf(toolerr.CodeInternal, "%v", err)
}

func resultJSON(out []byte) json.RawMessage {
	if trimmed := bytes.TrimSpace(out); len(trimmed) > 0 && json.Valid(trimmed) {
		return json.RawMessage(trimmed)
	}
	s, _ := json.Marshal(string(out))
	return s
}

// governorBox lets a nil Governor be stored atomically.
type governorBox struct{ g Governor }

// SetGovernor sets (or with nil removes) the Governor of every call
// admitted from now on.
func (h *Host) SetGovernor(g Governor) { h.gov.Store(&governorBox{g}) }

func (h *Host) governor() Governor {
	if b := h.gov.Load(); b != nil {
		return b.g
	}
	return nil
}

// Load reports how many calls are admitted and waiting now.
func (h *Host) Load() Load { return h.adm.load() }

// InCalls is the number of calls inside Call: arrived, and not yet past
// their observers (each of which will record it, or is recording it).
func (h *Host) InCalls() int { return int(h.calls.Load()) }

// WaitIdle returns when no admitted call is running (or with ctx's error).
func (h *Host) WaitIdle(ctx context.Context) error { return h.adm.waitIdle(ctx) }

// recordedName is the name of a tool that is not installed as its call is
// recorded (audit, metrics, logs): whole when it could be a tool's name
// (at most 64 bytes), else its start and end. The caller chose it, and a
// name of a megabyte per call would fill the audit log and every listing
// of it.
func recordedName(name string) string {
	start, end, cut := clip.Middle(name, 64, 32)
	if !cut {
		return name
	}
	return fmt.Sprintf("%s…%s (%d bytes)", start, end, len(name))
}

// RecordRefused records a call that its entry point refused before the
// pipeline could run it, because the request itself could not be used (a
// body too large, malformed or stalled): every call is a record (DESIGN),
// and these reach the observers — audit log, metrics, call log — like a
// call the pipeline refused, with err's code as the outcome. request is
// what was read of the request, hashed as its arguments (nil: nothing was
// read, and no hash is recorded); it is never kept as arguments, since it
// is not any.
func (h *Host) RecordRefused(ctx context.Context, tool string, request []byte, err error) {
	terr := toolerr.As(err)
	if terr == nil {
		return // not refused
	}
	h.calls.Add(1)
	defer h.calls.Add(-1)
	rec := CallRecord{Start: time.Now(), Entry: EntryOf(ctx), Tool: tool, Outcome: terr.Code, Message: terr.Message}
	if request != nil {
		sum := sha256.Sum256(request)
		rec.ArgumentsSHA256 = hex.EncodeToString(sum[:])
	}
	h.mu.RLock()
	ref, ok := h.tools[tool]
	h.mu.RUnlock()
	if ok {
		rec.Plugin, rec.Digest = ref.plugin.name, ref.plugin.digest
	} else {
		rec.Tool = recordedName(tool)
	}
	_ = h.observe(ctx, rec) // refused anyway: its caller gets err
}
