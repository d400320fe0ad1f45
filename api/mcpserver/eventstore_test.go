package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	progressEvent = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`
	answerEvent   = `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`
)

// replay reads After into strings; err is the iterator's error.
func replay(s *eventStore, session, stream string, index int) ([]string, error) {
	var got []string
	for d, err := range s.After(context.Background(), session, stream, index) {
		if err != nil {
			return got, err
		}
		got = append(got, string(d))
	}
	return got, nil
}

func mustAppend(t *testing.T, s *eventStore, session, stream, data string) {
	t.Helper()
	var d []byte
	if data != "" {
		d = []byte(data)
	}
	if err := s.Append(context.Background(), session, stream, d); err != nil {
		t.Fatalf("append %s/%s: %v", session, stream, err)
	}
}

func TestEventStoreReplaysAfterIndex(t *testing.T) {
	s := newEventStore(0, 0)
	ctx := context.Background()
	s.Open(ctx, "s1", "a")
	mustAppend(t, s, "s1", "a", "") // the SDK's priming event
	mustAppend(t, s, "s1", "a", progressEvent)
	mustAppend(t, s, "s1", "a", answerEvent)
	got, err := replay(s, "s1", "a", 0)
	if err != nil || len(got) != 2 || got[0] != progressEvent || got[1] != answerEvent {
		t.Fatalf("After(0) = %q, %v; want the progress and the answer", got, err)
	}
	if got, err := replay(s, "s1", "a", 2); err != nil || len(got) != 0 {
		t.Errorf("After(last) = %q, %v; want nothing", got, err)
	}
	// Another session's stream of the same id is not this one.
	if _, err := replay(s, "s2", "a", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("After on another session's stream: %v, want ErrEventsPurged", err)
	}
	// The standalone stream is not held: a fresh GET replays nothing and
	// never fails.
	if err := s.Append(ctx, "s1", "", []byte(progressEvent)); err != nil {
		t.Errorf("append to the standalone stream: %v", err)
	}
	if got, err := replay(s, "s1", "", -1); err != nil || len(got) != 0 {
		t.Errorf("standalone After(-1) = %q, %v; want nothing, no error", got, err)
	}
	if err := s.SessionClosed(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := replay(s, "s1", "a", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("After on a closed session: %v, want ErrEventsPurged", err)
	}
	if err := s.Append(ctx, "s1", "a", []byte(progressEvent)); !errors.Is(err, errStreamGone) {
		t.Errorf("append to a closed session's stream: %v, want errStreamGone", err)
	}
	if s.bytes != 0 || s.count != 0 || len(s.sessions) != 0 {
		t.Errorf("after close: %d bytes, %d streams, %d sessions held; want none", s.bytes, s.count, len(s.sessions))
	}
}

// A stream over maxStreamEvents drops its oldest events; resuming from
// before them is refused, resuming from after them works.
func TestEventStoreStreamEventBound(t *testing.T) {
	s := newEventStore(0, 0)
	s.Open(context.Background(), "s", "a")
	for range maxStreamEvents + 10 {
		mustAppend(t, s, "s", "a", progressEvent)
	}
	if _, err := replay(s, "s", "a", 5); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("After(5) with events 0..9 dropped: %v, want ErrEventsPurged", err)
	}
	got, err := replay(s, "s", "a", 9)
	if err != nil || len(got) != maxStreamEvents {
		t.Errorf("After(9): %d events, %v; want %d", len(got), err, maxStreamEvents)
	}
}

// An answered stream stays resumable for keep after its answer, then goes;
// an open stream (its call still running) does not expire.
func TestEventStoreAnsweredStreamsExpire(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newEventStore(0, time.Minute)
	s.now = func() time.Time { return now }
	ctx := context.Background()
	s.Open(ctx, "s", "done")
	s.Open(ctx, "s", "running")
	mustAppend(t, s, "s", "done", answerEvent)
	mustAppend(t, s, "s", "running", progressEvent)

	now = now.Add(59 * time.Second)
	if got, err := replay(s, "s", "done", -1); err != nil || len(got) != 1 {
		t.Fatalf("answered stream within keep: %q, %v", got, err)
	}
	now = now.Add(2 * time.Second)
	if _, err := replay(s, "s", "done", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("answered stream past keep: %v, want ErrEventsPurged", err)
	}
	now = now.Add(time.Hour)
	if got, err := replay(s, "s", "running", -1); err != nil || len(got) != 1 {
		t.Errorf("open stream an hour on: %q, %v; want it held", got, err)
	}
}

// At the byte bound whole streams go, answered ones first, then the least
// recently written open ones; the stream being written keeps its newest
// event even when that alone is over the bound.
func TestEventStoreByteBound(t *testing.T) {
	ev := func(n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"m","params":{"pad":%q}}`, make([]byte, n))
	}
	big := ev(400)
	s := newEventStore(int64(3*len(big)), 0)
	ctx := context.Background()
	for _, id := range []string{"old-open", "answered", "new-open"} {
		s.Open(ctx, "s", id)
	}
	mustAppend(t, s, "s", "old-open", big)
	mustAppend(t, s, "s", "answered", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`)
	mustAppend(t, s, "s", "new-open", big)
	mustAppend(t, s, "s", "new-open", big) // over: the answered stream goes first
	if _, err := replay(s, "s", "answered", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("answered stream kept over the bound: %v", err)
	}
	if _, err := replay(s, "s", "old-open", -1); err != nil {
		t.Errorf("old open stream dropped before the answered one: %v", err)
	}
	mustAppend(t, s, "s", "new-open", big) // over again: the oldest open one goes
	if _, err := replay(s, "s", "old-open", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("old open stream kept over the bound: %v", err)
	}
	huge := ev(10 * len(big))
	mustAppend(t, s, "s", "new-open", huge)
	got, err := replay(s, "s", "new-open", 2)
	if err != nil || len(got) != 1 || got[0] != huge {
		t.Errorf("a single event over the bound: %d events, %v; want the newest kept", len(got), err)
	}
	if s.count != 1 || s.bytes != int64(len(huge)) {
		t.Errorf("held %d streams, %d bytes; want 1 stream with the huge event", s.count, s.bytes)
	}
}

func TestEventStoreStreamCountBound(t *testing.T) {
	s := newEventStore(0, 0)
	s.maxStreams = 3
	ctx := context.Background()
	for i := range 5 {
		s.Open(ctx, "s", fmt.Sprint(i))
	}
	if s.count != 3 {
		t.Fatalf("held %d streams, want 3", s.count)
	}
	if _, err := replay(s, "s", "0", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("oldest stream kept over the count bound: %v", err)
	}
	if _, err := replay(s, "s", "4", -1); err != nil {
		t.Errorf("newest stream dropped: %v", err)
	}
}

func TestIsResponse(t *testing.T) {
	for msg, want := range map[string]bool{
		answerEvent:   true,
		progressEvent: false,
		`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}}`:       true,
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{}}`: false,
		`{"result":1,"jsonrpc":"2.0","id":3}`:                                true,
		`{"id":{"nested":[1,2]},"result":null}`:                              true,
		``:                                                                   false,
		`[` + answerEvent + `]`:                                              false,
		`{"jsonrpc":"2.0","id":1,"re`:                                        false,
		`{"jsonrpc":"2.0","params":{"result":1},"method":"notifications/message","id":1}`: false,
	} {
		if got := isResponse([]byte(msg)); got != want {
			t.Errorf("isResponse(%s) = %v, want %v", msg, got, want)
		}
	}
}

// FuzzIsResponse: whatever the bytes, isResponse does not panic; on valid
// JSON it says "response" only when there is a result or error key, and,
// when no key is escaped, finds one that comes before any method.
func FuzzIsResponse(f *testing.F) {
	f.Add([]byte(answerEvent))
	f.Add([]byte(progressEvent))
	f.Add([]byte(`{"id":1,"error":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := isResponse(data)
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return
		}
		_, method := m["method"]
		_, result := m["result"]
		_, failed := m["error"]
		if got && !result && !failed {
			t.Fatalf("isResponse(%s) = true without a result or error", data)
		}
		if !got && (result || failed) && !method && !bytes.Contains(data, []byte(`\\`)) {
			t.Fatalf("isResponse(%s) = false for a response", data)
		}
	})
}
