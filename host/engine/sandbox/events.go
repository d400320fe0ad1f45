package sandbox

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/toolhost/toolhost/host/engine"
)

// A plugin's events (engine.Events) in the in-process engine.
//
// Log lines: extism gates its log functions with a process-wide level
// (extism.SetLogLevel, default off; the guest PDKs ask for it with
// get_log_level and skip the call below it) and hands each line to the
// instance's logger. So the level is raised only while a call whose sink
// wants lines runs (listenLogs), and every instance's logger is
// callGuard.pluginLog, which passes on a line only while the guest is
// inside a log_* function (extism's own lines about instantiating and
// calling go through the same logger) and only to the call's sink. A call
// without a sink pays nothing, unless another call with one runs in the
// same process at the same moment (then extism formats its own debug line,
// which pluginLog drops).
//
// The level raised is debug, never trace: extism writes trace lines while
// it makes an instance, before the instance's logger can be replaced, to
// the standard logger. So a plugin's trace lines are not forwarded.

// logListeners counts the calls in this process whose sink wants log lines.
var logListeners struct {
	mu sync.Mutex // guards n and orders the level changes
	n  int
}

func listenLogs() {
	logListeners.mu.Lock()
	defer logListeners.mu.Unlock()
	logListeners.n++
	if logListeners.n == 1 {
		extism.SetLogLevel(extism.LogLevelDebug)
	}
}

func unlistenLogs() {
	logListeners.mu.Lock()
	defer logListeners.mu.Unlock()
	logListeners.n--
	if logListeners.n == 0 {
		extism.SetLogLevel(extism.LogLevelOff)
	}
}

// callEvents is one call's relay to its sink, with the per-call bounds.
// Like the callGuard that holds it, it is used by the call's goroutine only.
type callEvents struct {
	sink      engine.Events
	level     engine.LogLevel
	listening bool // listenLogs was called

	lines, bytes int // lines passed on so far, and their bytes
	dropped      int // lines cut for the bounds

	lastProgress time.Time
	pending      engine.Progress // a report held back by the rate limit
	held         bool
}

func startEvents(sink engine.Events) *callEvents {
	ev := &callEvents{sink: sink, level: sink.LogLevel()}
	if ev.level < engine.LogOff {
		ev.listening = true
		listenLogs()
	}
	return ev
}

// finish delivers what the bounds held back (the last progress report, a
// count of dropped lines) and lowers the log level again.
func (ev *callEvents) finish() {
	if ev.held {
		ev.sink.Progress(ev.pending)
		ev.held = false
	}
	if ev.dropped > 0 {
		ev.sink.Log(engine.LogWarn, fmt.Sprintf("toolhost: dropped %d more log lines of this call (a call may send %d lines, %d bytes)", ev.dropped, engine.MaxLogLinesPerCall, engine.MaxLogBytesPerCall))
	}
	if ev.listening {
		ev.listening = false
		unlistenLogs()
	}
}

func (ev *callEvents) log(level engine.LogLevel, text string) {
	if level < ev.level {
		return
	}
	text = engine.Clip(text)
	if ev.lines >= engine.MaxLogLinesPerCall || ev.bytes+len(text) > engine.MaxLogBytesPerCall {
		ev.dropped++
		return
	}
	ev.lines++
	ev.bytes += len(text)
	ev.sink.Log(level, text)
}

func (ev *callEvents) progress(p engine.Progress) {
	now := time.Now()
	if !ev.lastProgress.IsZero() && now.Sub(ev.lastProgress) < engine.ProgressInterval {
		ev.pending, ev.held = p, true
		return
	}
	ev.lastProgress, ev.held = now, false
	ev.sink.Progress(p)
}

// pluginLog is every instance's extism logger.
func (g *callGuard) pluginLog(level extism.LogLevel, text string) {
	if !g.inLog || g.events == nil {
		return
	}
	var l engine.LogLevel
	switch level {
	case extism.LogLevelTrace:
		l = engine.LogTrace
	case extism.LogLevelDebug:
		l = engine.LogDebug
	case extism.LogLevelInfo:
		l = engine.LogInfo
	case extism.LogLevelWarn:
		l = engine.LogWarn
	default:
		l = engine.LogError
	}
	g.events.log(l, text)
}

// progressHostFunction is toolhost.progress(progress f64, total f64,
// message i64): see HostModule.
func progressHostFunction() extism.HostFunction {
	f := extism.NewHostFunctionWithStack("progress", func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		g := guardOf(ctx)
		if g == nil || g.events == nil {
			return
		}
		progress, total := extism.DecodeF64(stack[0]), extism.DecodeF64(stack[1])
		if math.IsNaN(progress) || math.IsInf(progress, 0) {
			return
		}
		if !(total > 0) || math.IsInf(total, 0) {
			total = 0
		}
		g.events.progress(engine.Progress{Progress: progress, Total: total, Message: readMessage(p, stack[2])})
	}, []extism.ValueType{extism.ValueTypeF64, extism.ValueTypeF64, extism.ValueTypePTR}, nil)
	f.SetNamespace(HostModule)
	return f
}

// readMessage reads at most a line's worth of the Extism block at offset
// ("" for 0 or anything that is not a live block).
func readMessage(p *extism.CurrentPlugin, offset uint64) string {
	if offset == 0 || offset > math.MaxUint32 {
		return ""
	}
	n, err := p.Length(offset)
	if err != nil || n == 0 {
		return ""
	}
	view, ok := p.Memory().Read(uint32(offset), uint32(min(n, engine.MaxLogLineBytes+4)))
	if !ok {
		return ""
	}
	return engine.Clip(string(view))
}
