package sandbox

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/experimental"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
)

func (m *inProcessModule) Call(ctx context.Context, export string, input []byte) ([]byte, error) {
	out, finish, err := m.CallThen(ctx, export, input)
	finish()
	return out, err
}

// CallThen implements engine.Finisher: the instance is reset (or closed)
// by finish, so a worker can answer first. Nothing of it reaches another
// call before then: it goes back to the ready instances only in finish.
func (m *inProcessModule) CallThen(ctx context.Context, export string, input []byte) ([]byte, func(), error) {
	m.closeMu.RLock()
	var end callEnd
	returned := false
	defer func() {
		if !returned { // call panicked: close its instance, unlock, panic on
			end.clean = false
			m.finish(&end)
		}
	}()
	out, err := m.call(ctx, export, input, &end)
	returned = true
	return out, func() { m.finish(&end) }, err
}

// finish ends a call CallThen made: its instance reset and given back, or
// closed; the module's read lock released.
func (m *inProcessModule) finish(end *callEnd) {
	if end.in != nil {
		m.done(end.in, end.clean)
	}
	m.closeMu.RUnlock()
}

var _ engine.Finisher = (*inProcessModule)(nil)

// callEnd is what finishing a call needs: its instance (nil when it had
// none) and whether that instance is fit for the next call.
type callEnd struct {
	in    *instance
	clean bool
}

// call runs export with input; m.closeMu is read-locked by its caller.
func (m *inProcessModule) call(ctx context.Context, export string, input []byte, end *callEnd) (out []byte, err error) {
	if m.closed {
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "plugin %s was unloaded", m.spec.Name)
	}
	if uint64(len(input)) > uint64(m.spec.Limits.MemoryPages)*65536 {
		return nil, m.inputError(len(input))
	}
	// Instantiating (when no instance is ready) counts against the call's
	// budget as much as running it. (A worker's call comes with the
	// supervisor's deadline, within the budget: nothing to derive.)
	if !engine.WithinBudget(ctx, m.spec.Limits.TimeoutMS) {
		var cancel context.CancelFunc
		ctx, cancel = engine.Budget(ctx, m.spec.Limits.TimeoutMS)
		defer cancel()
	}

	in, ierr := m.take(ctx)
	g, stderr := in.g, in.stderr
	g.inputLen = uint64(len(input))
	state := &callState{}
	ctx = context.WithValue(ctx, callStateKey{}, state)
	ctx = context.WithValue(ctx, guardKey{}, g)
	ctx = experimental.WithMemoryAllocator(ctx, g)
	if ierr != nil {
		return nil, m.failure(ctx, g, ierr, stderr)
	}
	if sink := engine.EventsOf(ctx); sink != nil {
		g.events = startEvents(sink)
		defer g.events.finish() // before done: events holds no instance state
	}
	// returned: the export returned normally, so an error it reported
	// (a return code, an error message, a refused capability) leaves the
	// instance as fit for a reset as a success does. A trap, a WASI exit,
	// a limit, a misused host function or a stopped call still close it,
	// and so does any failed call of a reused instance, which no reset
	// follows: a failed call never hands its state to the next one.
	returned := false
	defer func() { end.in, end.clean = in, err == nil || (returned && !m.spec.ReuseInstances) }()
	if stopped := engine.Stopped(ctx, "the tool was about to start"); stopped != nil {
		return nil, stopped
	}
	rc, out, err := in.call(ctx, export, input)
	returned = in.r != nil && in.r.returned() && ctx.Err() == nil && !g.exhausted() && g.badAccess == "" && !g.inputRefused
	if ctx.Err() != nil {
		// The deadline passed or the caller left while the tool ran: it
		// was stopped (WithCloseOnContextDone), or it ran to its end in a
		// Supervised engine, whose supervisor was about to stop it.
		// Either way the call ended without an answer.
		return nil, m.failure(ctx, g, context.Cause(ctx), stderr)
	}
	if g.inputRefused {
		// extism ignores the failure to copy the input into the kernel's
		// memory: the export ran on an empty (or clobbered) input.
		return nil, m.inputError(len(input))
	}
	if err != nil || rc != 0 {
		if denied := deniedError(state); denied != nil {
			return nil, denied
		}
	}
	if err != nil {
		return nil, m.failure(ctx, g, err, stderr)
	}
	if g.badAccess != "" {
		return nil, toolerr.Errorf(toolerr.CodePluginError, "the tool %s", g.badAccess)
	}
	if rc != 0 {
		if g.exhausted() {
			return nil, m.memoryError(g, fmt.Sprintf("it returned error code %d", rc))
		}
		return nil, toolerr.Errorf(toolerr.CodePluginError, "the tool returned error code %d", rc)
	}
	return m.output(g, out)
}

// output checks a successful call's output. The Extism kernel silently
// ignores an output_set whose range is not inside its memory (for
// instance after an allocation failed), which would otherwise look like a
// success with an empty result.
func (m *inProcessModule) output(g *callGuard, out []byte) ([]byte, error) {
	limit := uint64(m.spec.Limits.MaxOutputBytes)
	if g.outputSet && uint64(len(out)) != g.outputLen {
		switch {
		case g.outputLen > limit:
			return nil, toolerr.Errorf(toolerr.CodeOutputTooLarge, "the tool tried to return %d bytes of output, the limit is %d", g.outputLen, limit)
		case g.exhausted():
			return nil, m.memoryError(g, "its output did not fit")
		default:
			return nil, toolerr.Errorf(toolerr.CodePluginError, "the tool set its output to a range outside its memory (%d bytes at offset %#x)", g.outputLen, g.outputOffset)
		}
	}
	if uint64(len(out)) > limit {
		return nil, toolerr.Errorf(toolerr.CodeOutputTooLarge, "the tool produced %d bytes of output, the limit is %d", len(out), limit)
	}
	if len(out) == 0 && g.exhausted() {
		return nil, m.memoryError(g, "it returned no output")
	}
	return out, nil
}
