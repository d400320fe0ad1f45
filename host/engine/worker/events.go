package worker

import (
	"bufio"
	"encoding/json"
	"io"
	"math"

	"github.com/toolhost/toolhost/host/engine"
)

// A plugin's events (engine.Events) cross from the worker to the
// supervisor as kindEvent frames written during the call, before its reply
// (the reply path is unchanged). The worker's in-process engine applies
// the per-call bounds; the supervisor applies them again (relay), since it
// trusts nothing a worker sends.

// frameEvents is the worker side: the sink of one call, which writes each
// event as a frame and flushes it, so it reaches the host while the call
// runs. It runs on the goroutine of Serve's loop (host functions run on
// the goroutine that made the call), the only writer of bw.
type frameEvents struct {
	bw    *bufio.Writer
	level engine.LogLevel
}

func (f *frameEvents) LogLevel() engine.LogLevel { return f.level }

func (f *frameEvents) Log(level engine.LogLevel, text string) {
	f.send(eventHeader{Level: level, Text: text})
}

func (f *frameEvents) Progress(p engine.Progress) {
	f.send(eventHeader{Progress: p.Progress, Total: p.Total, Text: p.Message})
}

// send writes one event. A write that fails means the host is gone; the
// reply that follows fails the same way and ends Serve.
func (f *frameEvents) send(h eventHeader) {
	if writeFrame(f.bw, kindEvent, h, nil) == nil {
		_ = f.bw.Flush()
	}
}

// maxEventsPerCall bounds what the supervisor passes on from one call:
// the sandbox's own bounds allow MaxLogLinesPerCall lines (+1 summary)
// and a progress report per ProgressInterval.
const maxEventsPerCall = engine.MaxLogLinesPerCall + 1 + 10_000

// relay is the supervisor side of one round trip: it decodes event frames
// and hands them to the call's sink, within the bounds. It runs on the
// round trip's reader goroutine, which ends before the call returns, so
// no event reaches the sink after that.
type relay struct {
	sink   engine.Events
	level  engine.LogLevel
	events int
	bytes  int
}

func newRelay(sink engine.Events) *relay {
	if sink == nil {
		return nil
	}
	return &relay{sink: sink, level: sink.LogLevel()}
}

// readReply reads frames until one that is neither an event nor a
// kindInstantiating, passing the events on (to nobody when r is nil: a
// worker that sends events unasked only wastes its own time) and calling
// instantiating for the latter.
func (r *relay) readReply(rd io.Reader, maxReply int, instantiating func()) (frame, error) {
	for {
		f, err := readFrame(rd, maxReply)
		switch {
		case err != nil:
			return f, err
		case f.kind == kindInstantiating:
			instantiating()
		case f.kind != kindEvent:
			return f, err
		case r != nil:
			r.pass(f.header)
		}
	}
}

func (r *relay) pass(raw []byte) {
	var h eventHeader
	if r.events >= maxEventsPerCall || json.Unmarshal(raw, &h) != nil {
		return
	}
	r.events++
	text := engine.Clip(h.Text)
	if h.Level != 0 {
		if h.Level < r.level || h.Level > engine.LogError || r.bytes+len(text) > engine.MaxLogBytesPerCall+engine.MaxLogLineBytes {
			return
		}
		r.bytes += len(text)
		r.sink.Log(h.Level, text)
		return
	}
	if math.IsNaN(h.Progress) || math.IsInf(h.Progress, 0) {
		return
	}
	if !(h.Total > 0) || math.IsInf(h.Total, 0) {
		h.Total = 0
	}
	r.sink.Progress(engine.Progress{Progress: h.Progress, Total: h.Total, Message: text})
}
