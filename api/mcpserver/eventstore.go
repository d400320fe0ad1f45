package mcpserver

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stream resumption (2025-11-25). Every POST of a session answers on an SSE
// stream of its own; the SDK numbers its events (<stream>_<n>) and, with an
// event store, keeps them so that a client whose connection dropped can GET
// the stream again with Last-Event-ID and receive what it missed: the rest
// of the call's progress and its result. A call keeps running while its
// client is away (a session's calls are not tied to one connection).
//
// eventStore is that store, bounded so that resumption cannot grow the
// process without limit:
//
//   - a stream holds at most maxStreamEvents events; beyond that its oldest
//     events are dropped, and a client resuming from before them gets 400
//     ("failed to replay events") and must call again;
//   - a stream whose call has answered (its last event is a JSON-RPC
//     response) is dropped keep after that answer: resuming later gets 400;
//   - all streams together hold at most maxBytes of events and at most
//     maxStreams streams; beyond either, whole streams are dropped, answered
//     ones first, each kind oldest first. The newest event of the stream
//     being written is always kept, even alone over maxBytes.
//   - a session's streams go with the session.
//
// The standalone GET stream (stream id "") is not held: it carries only
// list_changed notifications, which the SDK would replay in full to every
// new GET, and a bound on it would break the fresh GET (which asks for
// everything from the start). A client that was away re-lists its tools.
//
// 2026-07-28 has no resumption (SEP-2575); the stateless handler has no
// store, and the SDK never consults one for that revision.
type eventStore struct {
	maxBytes   int64
	maxStreams int
	keep       time.Duration
	now        func() time.Time // tests move time

	mu       sync.Mutex // guards the fields below and every heldStream
	bytes    int64      // sum of held event sizes
	count    int        // held streams
	sessions map[string]map[string]*heldStream
	open     list.List // *heldStream still waiting for their answer, least recently written first
	answered list.List // *heldStream whose call answered, oldest answer first
}

// maxStreamEvents bounds one stream. A call sends a heartbeat a second
// (progress.go) and a few log lines, and runs at most the 60 s ceiling of
// a signed timeout, plus any wait for approval: 1024 holds that with room.
const maxStreamEvents = 1024

// Defaults for HTTPOptions.ResumeBytes and ResumeKeep, and the stream count.
const (
	defaultResumeBytes   = 32 << 20
	defaultResumeKeep    = 2 * time.Minute
	defaultResumeStreams = 4096
)

type heldStream struct {
	session, id string
	first       int      // stream index of events[0]
	events      [][]byte // in stream order; nil is the SDK's priming event
	bytes       int64
	answered    bool
	last        time.Time // last write (answered: the answer)
	elem        *list.Element
}

var _ mcp.EventStore = (*eventStore)(nil)

func newEventStore(maxBytes int64, keep time.Duration) *eventStore {
	if maxBytes == 0 {
		maxBytes = defaultResumeBytes
	}
	if keep <= 0 {
		keep = defaultResumeKeep
	}
	return &eventStore{
		maxBytes:   maxBytes,
		maxStreams: defaultResumeStreams,
		keep:       keep,
		now:        time.Now,
		sessions:   map[string]map[string]*heldStream{},
	}
}

// errStreamGone answers a write to a stream that is no longer held; the
// SDK still delivers the event to a connected client.
var errStreamGone = errors.New("mcpserver: the stream is no longer held for resumption (dropped at the event store's bound)")

// Open starts holding a new stream.
func (s *eventStore) Open(_ context.Context, sessionID, streamID string) error {
	if streamID == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	streams := s.sessions[sessionID]
	if streams == nil {
		streams = map[string]*heldStream{}
		s.sessions[sessionID] = streams
	}
	if streams[streamID] != nil {
		return nil
	}
	h := &heldStream{session: sessionID, id: streamID, last: s.now()}
	h.elem = s.open.PushBack(h)
	streams[streamID] = h
	s.count++
	s.enforce(h)
	return nil
}

// Append holds the next event of a stream.
func (s *eventStore) Append(_ context.Context, sessionID, streamID string, data []byte) error {
	if streamID == "" {
		return nil
	}
	answer := isResponse(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.sessions[sessionID][streamID]
	if h == nil {
		return errStreamGone
	}
	h.events = append(h.events, data)
	h.bytes += int64(len(data))
	s.bytes += int64(len(data))
	for len(h.events) > maxStreamEvents {
		s.dropFirst(h)
	}
	h.last = s.now()
	if answer && !h.answered {
		h.answered = true
		s.open.Remove(h.elem)
		h.elem = s.answered.PushBack(h)
	} else if h.answered {
		s.answered.MoveToBack(h.elem)
	} else {
		s.open.MoveToBack(h.elem)
	}
	s.enforce(h)
	return nil
}

// After returns the events after index, or ErrEventsPurged when one of
// them was dropped (the SDK then answers 400 and the client calls again).
func (s *eventStore) After(_ context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	events, err := s.after(sessionID, streamID, index)
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, e := range events {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func (s *eventStore) after(sessionID, streamID string, index int) ([][]byte, error) {
	if streamID == "" {
		return nil, nil // not held: nothing to replay
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	h := s.sessions[sessionID][streamID]
	if h == nil {
		return nil, fmt.Errorf("mcpserver: stream %q is not held: its call answered more than %v ago, or it was dropped at the event store's bound: %w", streamID, s.keep, mcp.ErrEventsPurged)
	}
	start := index + 1 - h.first
	if start < 0 {
		return nil, fmt.Errorf("mcpserver: stream %q no longer holds the events after %d (it holds the last %d): %w", streamID, index, len(h.events), mcp.ErrEventsPurged)
	}
	if start >= len(h.events) {
		return nil, nil
	}
	// Held events are never modified; the slice is, so copy it.
	return slices.Clone(h.events[start:]), nil
}

// SessionClosed drops the session's streams.
func (s *eventStore) SessionClosed(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.sessions[sessionID] {
		s.drop(h)
	}
	return nil
}

// enforce applies the bounds after a write to cur. s.mu is held.
func (s *eventStore) enforce(cur *heldStream) {
	s.expire()
	for s.bytes > s.maxBytes || s.count > s.maxStreams {
		victim := s.oldestOther(cur)
		if victim == nil {
			break
		}
		s.drop(victim)
	}
	for s.bytes > s.maxBytes && len(cur.events) > 1 {
		s.dropFirst(cur)
	}
}

// expire drops streams whose call answered more than keep ago.
func (s *eventStore) expire() {
	cutoff := s.now().Add(-s.keep)
	for e := s.answered.Front(); e != nil; e = s.answered.Front() {
		h := e.Value.(*heldStream)
		if h.last.After(cutoff) {
			return
		}
		s.drop(h)
	}
}

// oldestOther is the stream to drop first at a bound: the oldest answered
// one, else the least recently written open one; never cur.
func (s *eventStore) oldestOther(cur *heldStream) *heldStream {
	for _, l := range []*list.List{&s.answered, &s.open} {
		for e := l.Front(); e != nil; e = e.Next() {
			if h := e.Value.(*heldStream); h != cur {
				return h
			}
		}
	}
	return nil
}

func (s *eventStore) dropFirst(h *heldStream) {
	n := int64(len(h.events[0]))
	h.events[0] = nil
	h.events = h.events[1:]
	h.first++
	h.bytes -= n
	s.bytes -= n
}

func (s *eventStore) drop(h *heldStream) {
	if h.answered {
		s.answered.Remove(h.elem)
	} else {
		s.open.Remove(h.elem)
	}
	s.bytes -= h.bytes
	s.count--
	streams := s.sessions[h.session]
	delete(streams, h.id)
	if len(streams) == 0 {
		delete(s.sessions, h.session)
	}
}

// isResponse reports whether an encoded JSON-RPC message is a response
// (the answer that ends a call's stream). It reads the top-level keys up to
// the first of method, result or error, so a large result is not scanned,
// and allocates nothing: it runs on every event of every call. Keys are
// compared as written (the SDK's encoder escapes none of these); anything
// malformed is not a response.
func isResponse(data []byte) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return false
		}
		end := stringEnd(data, i)
		if end < 0 {
			return false
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		switch string(key) {
		case "method":
			return false
		case "result", "error":
			return true
		}
		if i = skipValue(data, i+1); i < 0 {
			return false
		}
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != ',' {
			return false
		}
		i++
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that opens at i, or -1.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just past the value that starts at or after
// i, or -1 when it is cut short.
func skipValue(data []byte, i int) int {
	i = skipSpace(data, i)
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				if i = stringEnd(data, i); i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}
