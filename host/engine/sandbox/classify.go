package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/sys"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/clip"
)

func (m *inProcessModule) inputError(n int) *toolerr.Error {
	return toolerr.Errorf(toolerr.CodeMemoryLimit, "the arguments (%d bytes) do not fit in the tool's memory (limit %s; the Extism runtime's own 16 pages count against it)", n, pagesText(m.spec.Limits.MemoryPages))
}

func (m *inProcessModule) memoryError(g *callGuard, what string) *toolerr.Error {
	return toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool ran out of memory (%s; limit %s) and %s", g.exhaustion(), pagesText(m.spec.Limits.MemoryPages), what)
}

// failure turns an error from instantiating or running the module into an
// *Error.
func (m *inProcessModule) failure(ctx context.Context, g *callGuard, err error, stderr *cappedBuffer) *toolerr.Error {
	spec := m.spec
	// wazero stops the module at a loop back-edge once ctx ends
	// (WithCloseOnContextDone): the deadline passed or the caller left.
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return toolerr.Errorf(toolerr.CodeTimeout, "the tool did not finish within its deadline (timeout_ms %d, or the caller's earlier deadline); it was stopped", spec.Limits.TimeoutMS)
	}
	if ctx.Err() != nil {
		return engine.Cancelled()
	}
	msg := printable(truncateMsg(strings.TrimSuffix(firstLine(err.Error()), " (recovered by wazero)"), 1024))
	guestErr := stderr.String()
	// The guest's own message (error_set) is its words, not the engine's:
	// none of the engine's phrases below may decide its code.
	var own *guestError
	engineErr := !errors.As(err, &own)
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	trapped := isExit || engineErr && strings.Contains(msg, "wasm error:")
	// A language runtime that runs out of memory says so on stderr and
	// exits or traps (Go: "fatal error: out of memory", exit code 2).
	oomSaid := strings.Contains(strings.ToLower(guestErr), "out of memory")
	switch {
	case g.exhausted() && trapped:
		return m.memoryError(g, "crashed ("+msg+")")
	case trapped && oomSaid:
		return toolerr.Errorf(toolerr.CodeMemoryLimit, "the tool ran out of memory (limit %s)%s", pagesText(spec.Limits.MemoryPages), tail(guestErr))
	case g.badAccess != "":
		return toolerr.Errorf(toolerr.CodePluginError, "the tool %s", g.badAccess)
	case isExit:
		return toolerr.Errorf(toolerr.CodePluginError, "the tool exited with code %d%s", exit.ExitCode(), tail(guestErr))
	case engineErr && strings.Contains(msg, "unknown function"):
		return toolerr.Errorf(toolerr.CodeInvalidModule, "the module does not export the tool's function")
	case engineErr && strings.Contains(msg, "stack overflow"):
		return toolerr.Errorf(toolerr.CodePluginError, "the tool crashed (stack overflow: its calls nested too deeply)%s", tail(guestErr))
	case trapped:
		return toolerr.Errorf(toolerr.CodePluginError, "the tool crashed (%s)%s", msg, tail(guestErr))
	case engineErr && (strings.HasPrefix(msg, "could not ") || strings.Contains(msg, "instantiating ")):
		// A host function refused the guest's arguments (extism panics
		// with "could not read/write value at offset").
		return toolerr.Errorf(toolerr.CodePluginError, "the tool crashed (%s)", msg)
	}
	// An error set by the guest with error_set: the tool's own message.
	if g.exhausted() {
		return m.memoryError(g, "failed: "+printable(truncateMsg(err.Error(), 1024)))
	}
	return toolerr.Errorf(toolerr.CodePluginError, "%s", printable(truncateMsg(err.Error(), 2048)))
}

// guestError is the message a guest set with error_set, returned by a
// call whose export returned normally.
type guestError struct{ msg string }

func (e *guestError) Error() string { return e.msg }

// printable makes guest-controlled text safe to show (clip.Printable).
func printable(s string) string { return clip.Printable(s) }

func pagesText(pages uint32) string {
	b := uint64(pages) * 65536
	if b >= 1<<20 {
		return fmt.Sprintf("%d pages = %d MiB", pages, b>>20)
	}
	return fmt.Sprintf("%d pages = %d KiB", pages, b>>10)
}

func tail(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	return ": " + printable(truncateMsg(firstLine(s), 300))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func truncateMsg(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
