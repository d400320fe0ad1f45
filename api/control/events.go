package control

import (
	"math"
	"strconv"
	"sync"

	"github.com/toolhost/toolhost/host"
)

// A call's plugin events (host.CallEvents) cross the socket when the
// caller has a sink (`toolhost mcp` in front of a running serve, for a
// client that asked for lines or progress): the request names the log
// level wanted in eventsHeader, and the answer is a stream of JSON values,
// {"event":{…}} per event as it happens, then the usual envelope.

// eventsHeader carries the sink's LogLevel (a number; host.LogOff: progress
// only). Without it, a call's answer is the plain envelope.
const eventsHeader = "Toolhost-Events"

// wireEvent is one event: a log line (Level set) or a progress report.
type wireEvent struct {
	Level    host.LogLevel `json:"level,omitempty"`
	Text     string        `json:"text,omitempty"`
	Progress float64       `json:"progress,omitempty"`
	Total    float64       `json:"total,omitempty"`
}

// maxStreamedEvents bounds what one call sends (the engine bounds lines
// and progress far lower; this holds whatever reaches the socket).
const maxStreamedEvents = 10_000

// streamEvents is the host side: the call's sink, which queues events for
// one writer goroutine so the engine never waits for the socket.
type streamEvents struct {
	level  host.LogLevel
	mu     sync.Mutex // guards closed, sent and the send on queue
	closed bool
	sent   int
	queue  chan wireEvent
	done   chan struct{}
}

func (s *streamEvents) LogLevel() host.LogLevel { return s.level }

func (s *streamEvents) Log(level host.LogLevel, text string) {
	s.put(wireEvent{Level: level, Text: text})
}

func (s *streamEvents) Progress(p host.Progress) {
	s.put(wireEvent{Progress: p.Progress, Total: p.Total, Text: p.Message})
}

func (s *streamEvents) put(e wireEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.sent >= maxStreamedEvents {
		return
	}
	select {
	case s.queue <- e:
		s.sent++
	default: // the reader is slower than the plugin: drop
	}
}

// newStreamEvents makes the sink for a call whose caller asked for its
// events at the level in header (a number; garbage gets progress only):
// one goroutine writes the queued events to lw until stop, which returns
// once everything queued is written.
func newStreamEvents(header string, lw *lineWriter) (s *streamEvents, stop func()) {
	n, err := strconv.ParseUint(header, 10, 8)
	if err != nil {
		n = uint64(host.LogOff)
	}
	s = &streamEvents{level: host.LogLevel(n), queue: make(chan wireEvent, 64), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for e := range s.queue {
			// A caller that went away: drain.
			_ = lw.write(callLine{Event: &e}, false)
		}
	}()
	return s, func() {
		s.mu.Lock()
		s.closed = true
		close(s.queue)
		s.mu.Unlock()
		<-s.done
	}
}

// passEvent hands one event to the sink. The host process is trusted (the
// socket's peer is this user); only what the sink must never see is held.
func passEvent(sink host.CallEvents, e wireEvent) {
	text := e.Text
	if e.Level != 0 {
		if e.Level >= sink.LogLevel() && e.Level <= host.LogError {
			sink.Log(e.Level, text)
		}
		return
	}
	if math.IsNaN(e.Progress) || math.IsInf(e.Progress, 0) {
		return
	}
	if !(e.Total > 0) || math.IsInf(e.Total, 0) {
		e.Total = 0
	}
	sink.Progress(host.Progress{Progress: e.Progress, Total: e.Total, Message: text})
}
