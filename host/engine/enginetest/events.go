package enginetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/plugin"
)

// Sink is an engine.Events that records what it receives, and whether
// anything arrived after the call returned (Returned).
type Sink struct {
	Level engine.LogLevel

	mu       sync.Mutex
	lines    []string
	progress []engine.Progress
	returned bool
	late     int
}

func (s *Sink) LogLevel() engine.LogLevel { return s.Level }

func (s *Sink) Log(level engine.LogLevel, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.returned {
		s.late++
	}
	s.lines = append(s.lines, level.String()+" "+text)
}

func (s *Sink) Progress(p engine.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.returned {
		s.late++
	}
	s.progress = append(s.progress, p)
}

// Returned marks the call as returned: events from now on are late.
func (s *Sink) Returned() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.returned = true
}

// Got returns the lines and progress reports received, and how many of
// them came after Returned.
func (s *Sink) Got() ([]string, []engine.Progress, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...), append([]engine.Progress(nil), s.progress...), s.late
}

func (s *suite) callWithSink(t *testing.T, m engine.Module, export string, sink *Sink) {
	t.Helper()
	_, err := m.Call(engine.WithEvents(context.Background(), sink), export, []byte(`{}`))
	sink.Returned()
	if err != nil {
		t.Fatalf("%s: %v", export, err)
	}
}

// A sink gets the plugin's lines at its level and above, in order, and its
// progress: the first report at once, the last one (held back by the rate
// limit) before Call returns; nothing after.
func (s *suite) events(t *testing.T) {
	m := s.compile(t, Spec("events", plugin.Limits{}))
	for round := range 2 { // the second on a reused or reset instance
		sink := &Sink{Level: engine.LogInfo}
		s.callWithSink(t, m, "events", sink)
		lines, progress, late := sink.Got()
		if got, want := strings.Join(lines, "|"), "info hello|warn warned"; got != want {
			t.Errorf("round %d: lines %q, want %q (debug is below the sink's level)", round, got, want)
		}
		if len(progress) < 2 || len(progress) > 3 {
			t.Fatalf("round %d: progress %+v, want 1/3 and 3/3 (2/3 may be dropped by the rate limit)", round, progress)
		}
		first, last := progress[0], progress[len(progress)-1]
		if first != (engine.Progress{Progress: 1, Total: 3, Message: "one"}) || last != (engine.Progress{Progress: 3, Total: 3, Message: "done"}) {
			t.Errorf("round %d: progress %+v, want 1/3 %q first and 3/3 %q last", round, progress, "one", "done")
		}
		if late != 0 {
			t.Errorf("round %d: %d events after Call returned", round, late)
		}
	}
	// At debug the debug line comes too.
	sink := &Sink{Level: engine.LogDebug}
	s.callWithSink(t, m, "events", sink)
	if lines, _, _ := sink.Got(); len(lines) != 3 || lines[0] != "debug debug line" {
		t.Errorf("at debug: lines %q, want the debug line first", lines)
	}
}

// A flood of long lines is cut: each line to MaxLogLineBytes with the
// mark, the call's lines to MaxLogBytesPerCall, and one last line says
// how many were dropped.
func (s *suite) eventsBounded(t *testing.T) {
	m := s.compile(t, Spec("events-flood", plugin.Limits{}))
	sink := &Sink{Level: engine.LogDebug}
	s.callWithSink(t, m, "log_flood", sink)
	lines, _, late := sink.Got()
	if len(lines) < 2 || len(lines) > engine.MaxLogLinesPerCall+1 {
		t.Fatalf("%d lines from a flood of 300, want at most %d", len(lines), engine.MaxLogLinesPerCall+1)
	}
	total := 0
	for _, l := range lines[:len(lines)-1] {
		text := strings.TrimPrefix(l, "info ")
		total += len(text)
		if len(text) > engine.MaxLogLineBytes || !strings.HasSuffix(text, engine.TruncatedMark) {
			t.Fatalf("a 1500-byte line came as %d bytes ending %q, want at most %d ending with the mark", len(text), text[max(0, len(text)-20):], engine.MaxLogLineBytes)
		}
	}
	if total > engine.MaxLogBytesPerCall {
		t.Errorf("%d bytes of lines, the bound is %d", total, engine.MaxLogBytesPerCall)
	}
	summary := lines[len(lines)-1]
	if want := fmt.Sprintf("dropped %d more log lines", 300-(len(lines)-1)); !strings.HasPrefix(summary, "warn ") || !strings.Contains(summary, want) {
		t.Errorf("last line %q, want a warning saying %q", summary, want)
	}
	if late != 0 {
		t.Errorf("%d events after Call returned", late)
	}
}

// Without a sink, or with one that wants no lines, a plugin's log calls
// and progress reports change nothing.
func (s *suite) eventsUnasked(t *testing.T) {
	m := s.compile(t, Spec("events-unasked", plugin.Limits{}))
	if _, err := m.Call(context.Background(), "events", []byte(`{}`)); err != nil {
		t.Fatalf("events without a sink: %v", err)
	}
	sink := &Sink{Level: engine.LogOff}
	s.callWithSink(t, m, "events", sink)
	lines, progress, _ := sink.Got()
	if len(lines) != 0 {
		t.Errorf("a sink at LogOff got lines %q", lines)
	}
	if len(progress) == 0 {
		t.Errorf("a sink at LogOff got no progress; it asked for it")
	}
}

// quietSink wants everything and keeps nothing.
type quietSink struct{ level engine.LogLevel }

func (q quietSink) LogLevel() engine.LogLevel { return q.level }
func (quietSink) Log(engine.LogLevel, string) {}
func (quietSink) Progress(engine.Progress)    {}

// BenchmarkEvents measures a call with and without an event sink, on an
// export that reports nothing (count) and on one that logs three lines
// and reports progress three times (events): what listening costs, and
// that a call without a sink pays nothing for the feature.
func BenchmarkEvents(b *testing.B, e engine.Engine) {
	m, err := e.Compile(context.Background(), Spec("bench-events", plugin.Limits{}))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(context.Background())
	for _, export := range []string{"count", "events"} {
		for _, c := range []struct {
			name string
			sink engine.Events
		}{
			{"no-sink", nil},
			{"progress-only", quietSink{engine.LogOff}},
			{"logs-and-progress", quietSink{engine.LogDebug}},
		} {
			b.Run(export+"/"+c.name, func(b *testing.B) {
				ctx := context.Background()
				if c.sink != nil {
					ctx = engine.WithEvents(ctx, c.sink)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.Call(ctx, export, []byte(`{}`)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
