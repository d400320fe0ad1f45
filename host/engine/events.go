package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Events receives what a plugin reports about itself while one call runs:
// its own log lines (the Extism log functions, pdk.Log) and its progress
// (the toolhost.progress host function). A caller that wants them puts an
// Events in the call's ctx with WithEvents; without one an engine does no
// work for them (the plugin's log calls are not even made, see LogLevel).
//
// Contract every engine keeps:
//   - Events are delivered during Call, in the order the plugin made them,
//     and none after Call returns; the last progress the plugin reported is
//     delivered before Call returns, even when it was held back by the rate
//     limit.
//   - Lines are at or above LogLevel(), at most MaxLogLineBytes each (a
//     longer one ends in TruncatedMark), at most MaxLogLinesPerCall and
//     MaxLogBytesPerCall per call; what is cut is counted in one last
//     LogWarn line from the host ("dropped N log lines …").
//   - Progress values reach the sink as the plugin reported them, at most
//     one per ProgressInterval (the latest wins), finite, total 0 meaning
//     none; messages are bounded like log lines.
//   - Methods are called from one goroutine at a time (not necessarily the
//     same one) and must not block: a sink that cannot keep up drops.
type Events interface {
	// LogLevel is the least severe plugin log level the sink wants
	// (LogOff: none). It is read once, when the call starts.
	LogLevel() LogLevel
	Log(level LogLevel, text string)
	Progress(p Progress)
}

// Progress is one progress report of a plugin.
type Progress struct {
	Progress float64
	Total    float64 // 0: unknown
	Message  string
}

// LogLevel is the severity of a plugin log line (Extism's levels).
type LogLevel uint8

const (
	LogTrace LogLevel = iota + 1
	LogDebug
	LogInfo
	LogWarn
	LogError
	// LogOff wants no lines.
	LogOff LogLevel = math.MaxUint8
)

func (l LogLevel) String() string {
	switch l {
	case LogTrace:
		return "trace"
	case LogDebug:
		return "debug"
	case LogInfo:
		return "info"
	case LogWarn:
		return "warn"
	case LogError:
		return "error"
	case LogOff:
		return "off"
	}
	return fmt.Sprintf("LogLevel(%d)", uint8(l))
}

// Bounds on what a plugin can send through Events in one call. They keep a
// plugin that floods its log from costing the host memory or time: what
// passes them crosses the worker pipe, the rest is counted and dropped in
// the sandbox.
const (
	MaxLogLineBytes    = 1024
	MaxLogLinesPerCall = 200
	MaxLogBytesPerCall = 64 << 10
	// ProgressInterval is the least time between two progress reports
	// delivered; a report within it is held and replaced by the next one.
	ProgressInterval = 50 * time.Millisecond
	// TruncatedMark ends a line or message cut at MaxLogLineBytes.
	TruncatedMark = "…truncated"
)

type eventsKey struct{}

// WithEvents returns ctx carrying ev as the sink of the call run under it
// (nil: none, which also hides a sink an outer ctx carried).
func WithEvents(ctx context.Context, ev Events) context.Context {
	return context.WithValue(ctx, eventsKey{}, eventsBox{ev})
}

type eventsBox struct{ ev Events }

// EventsOf returns the sink ctx carries, or nil.
func EventsOf(ctx context.Context) Events {
	b, _ := ctx.Value(eventsKey{}).(eventsBox)
	return b.ev
}

// Clip cuts s to at most MaxLogLineBytes, at a rune boundary, marking the
// cut with TruncatedMark, and replaces invalid UTF-8.
func Clip(s string) string {
	s = cut(s)
	if !utf8.ValidString(s) {
		// Each invalid run becomes one U+FFFD (3 bytes): cut again.
		s = cut(strings.ToValidUTF8(s, "\uFFFD"))
	}
	return s
}

func cut(s string) string {
	if len(s) <= MaxLogLineBytes {
		return s
	}
	n := MaxLogLineBytes - len(TruncatedMark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + TruncatedMark
}
