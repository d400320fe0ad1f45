package observe

import (
	"context"
	"log/slog"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// maxLoggedArguments cuts logged arguments.
const maxLoggedArguments = 4096

// CallLog writes one line per call: entry, tool, plugin, digest,
// duration_ms, queued_ms, outcome, and the governor's decision when one
// ran. It is a host.CallObserver.
type CallLog struct {
	Log *slog.Logger
	// Arguments adds each call's arguments (cut at 4 KiB) to its line. Off
	// by default: arguments are the user's data.
	Arguments bool
}

var _ host.CallObserver = CallLog{}

// ObserveCall implements host.CallObserver.
func (c CallLog) ObserveCall(ctx context.Context, r host.CallRecord) {
	level, outcome := slog.LevelInfo, "ok"
	if r.Outcome != "" {
		outcome = string(r.Outcome)
		if r.Outcome == toolerr.CodeInternal {
			level = slog.LevelError
		}
	}
	attrs := []slog.Attr{
		slog.String("entry", string(r.Entry)),
		slog.String("tool", r.Tool),
		slog.String("plugin", r.Plugin),
	}
	if r.Plugin != "" {
		attrs = append(attrs, slog.String("digest", r.Digest.Short()))
	}
	attrs = append(attrs,
		slog.Float64("duration_ms", float64(r.Duration.Microseconds())/1000),
		slog.Float64("queued_ms", float64(r.Queued.Microseconds())/1000),
		slog.String("outcome", outcome),
	)
	if r.Decision != "" {
		attrs = append(attrs, slog.String("decision", r.Decision), slog.String("decided_by", r.DecidedBy))
	}
	if c.Arguments {
		a := string(r.Arguments)
		if len(a) > maxLoggedArguments {
			a = a[:maxLoggedArguments] + "…"
		}
		attrs = append(attrs, slog.String("arguments", a))
	}
	c.Log.LogAttrs(ctx, level, "tool call", attrs...)
}
