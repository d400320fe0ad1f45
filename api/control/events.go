package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
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

// streamCall runs a call whose caller wants its events, answering with
// the events as they come and then the envelope.
func streamCall(ctx context.Context, w http.ResponseWriter, r *http.Request, api API, tool string, args []byte) {
	n, err := strconv.ParseUint(r.Header.Get(eventsHeader), 10, 8)
	if err != nil {
		n = uint64(host.LogOff) // a client that sends garbage gets progress only
	}
	s := &streamEvents{level: host.LogLevel(n), queue: make(chan wireEvent, 64), done: make(chan struct{})}
	w.Header().Set("Content-Type", "application/json")
	flusher, _ := w.(http.Flusher)
	go func() {
		defer close(s.done)
		enc := json.NewEncoder(w)
		for e := range s.queue {
			if enc.Encode(struct {
				Event wireEvent `json:"event"`
			}{e}) != nil {
				continue // the caller went away: drain
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}()
	res, err := api.Call(host.WithCallEvents(ctx, s), tool, args)
	s.mu.Lock()
	s.closed = true
	close(s.queue)
	s.mu.Unlock()
	<-s.done
	// The status line may have gone out with the first event: the
	// envelope alone tells success from failure.
	_ = json.NewEncoder(w).Encode(struct {
		Result json.RawMessage `json:"result,omitempty"`
		Error  *wireError      `json:"error,omitempty"`
	}{res, toWire(err)})
}

// callStreaming is the client side of a call with a sink: it passes the
// events on as they arrive and returns the envelope's result.
func (c *Client) callStreaming(ctx context.Context, path string, args []byte, sink host.CallEvents) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://toolhost"+path, bytes.NewReader(args))
	if err != nil {
		return nil, err
	}
	req.Header.Set(entryHeader, string(host.EntryOf(ctx)))
	req.Header.Set(eventsHeader, strconv.Itoa(int(sink.LogLevel())))
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control: the running toolhost did not answer: %w", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, 64<<20))
	events := 0
	for {
		var v struct {
			Event  *wireEvent      `json:"event"`
			Result json.RawMessage `json:"result"`
			Error  *wireError      `json:"error"`
		}
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("control: malformed answer (HTTP %d): %v", resp.StatusCode, err)
		}
		if v.Event == nil {
			if len(v.Result) == 0 || string(v.Result) == "null" {
				v.Result = nil
			}
			return v.Result, fromWire(v.Error)
		}
		if events++; events <= maxStreamedEvents {
			passEvent(sink, *v.Event)
		}
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
