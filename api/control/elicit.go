package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/internal/strictjson"
)

// Approval questions across the socket. A call that `toolhost mcp` forwards
// to a running serve is governed there, but the person who can approve it
// is the MCP client's user, on this side (elicitation). A call request with
// elicitHeader says its caller can ask that person: the answer then comes
// as JSON lines, one {"ask": Pending} per question and the reply envelope
// last, and the caller posts each answer to /v1/elicitations/{id}. A call
// without the header answers as before, so either side may be older.
//
// The answer counts as the MCP client's (govern marks it "mcp-client"). The
// socket is the operator's (0600, same user), who can decide any pending
// call already; this route decides only questions that went to a caller.

const elicitHeader = "Toolhost-Elicit"

var elicitAnswerShape = strictjson.Object{"approve": strictjson.Any{}, "reason": strictjson.Any{}, "unanswered": strictjson.Any{}}

// elicitAnswer is the caller's answer to one question.
type elicitAnswer struct {
	Approve bool   `json:"approve"`
	Reason  string `json:"reason,omitempty"`
	// Unanswered says why the caller could not ask its user; the call
	// then waits for an operator, as it would without elicitation.
	Unanswered string `json:"unanswered,omitempty"`
}

// callLine is one line of a streamed call answer: a plugin event (see
// events.go), a question, or the envelope that ends it.
type callLine struct {
	Event  *wireEvent      `json:"event,omitempty"`
	Ask    *govern.Pending `json:"ask,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

// elicitations are the questions sent to callers that wait for an answer.
type elicitations struct {
	mu      sync.Mutex                   // guards waiting
	waiting map[string]chan elicitAnswer // by approval ID; buffered 1
}

func (e *elicitations) add(id string) chan elicitAnswer {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.waiting == nil {
		e.waiting = map[string]chan elicitAnswer{}
	}
	ch := make(chan elicitAnswer, 1)
	e.waiting[id] = ch
	return ch
}

func (e *elicitations) remove(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.waiting, id)
}

// answer hands a to the question id; false when none waits.
func (e *elicitations) answer(id string, a elicitAnswer) bool {
	e.mu.Lock()
	ch, ok := e.waiting[id]
	delete(e.waiting, id)
	e.mu.Unlock()
	if ok {
		ch <- a
	}
	return ok
}

// lineWriter writes a streamed call answer: questions while the call runs,
// then the envelope. Questions come from the governor's goroutine, the
// envelope from the handler's.
type lineWriter struct {
	mu    sync.Mutex // guards w and ended
	w     http.ResponseWriter
	ended bool
}

func (l *lineWriter) write(v callLine, last bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return errors.New("control: the call has answered already")
	}
	l.ended = last
	if err := json.NewEncoder(l.w).Encode(v); err != nil {
		return err
	}
	return http.NewResponseController(l.w).Flush()
}

// elicitor sends each question to the caller and waits for its answer.
func (e *elicitations) elicitor(lw *lineWriter) govern.Elicitor {
	return func(ctx context.Context, p govern.Pending) (govern.Answer, error) {
		ch := e.add(p.ID)
		defer e.remove(p.ID)
		if err := lw.write(callLine{Ask: &p}, false); err != nil {
			return govern.Answer{}, err
		}
		select {
		case a := <-ch:
			if a.Unanswered != "" {
				return govern.Answer{}, errors.New(a.Unanswered)
			}
			return govern.Answer{Approve: a.Approve, Reason: a.Reason}, nil
		case <-ctx.Done():
			return govern.Answer{}, ctx.Err()
		}
	}
}

// serveStreamedCall runs a call whose caller wants its events
// (eventsHeader) or can ask its user (elicitHeader), or both: it answers
// with JSON lines, events and questions as they come, then the envelope
// (the status line went out with the first line, so the envelope alone
// tells success from failure).
func (e *elicitations) serveStreamedCall(ctx context.Context, w http.ResponseWriter, r *http.Request, api API, tool string, args []byte) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	lw := &lineWriter{w: w}
	stop := func() {}
	if h := r.Header.Get(eventsHeader); h != "" {
		var sink *streamEvents
		sink, stop = newStreamEvents(h, lw)
		ctx = host.WithCallEvents(ctx, sink)
	}
	if r.Header.Get(elicitHeader) == "1" {
		ctx = govern.WithElicitor(ctx, e.elicitor(lw))
	}
	res, err := api.Call(ctx, tool, args)
	stop() // every event is written before the envelope
	_ = lw.write(callLine{Result: res, Error: toWire(err)}, true)
}

// serveAnswer is POST /v1/elicitations/{id}.
func (e *elicitations) serveAnswer(r *http.Request) error {
	// An answer decides a call, so it is read as strictly as a decision
	// (ParseDecision): {"approve":false,"approve":true} is refused, not
	// read as its last key.
	var a elicitAnswer
	if err := decodeStrictBody(r.Body, 64<<10, elicitAnswerShape, &a, `the answer must be {"approve":true|false,"reason":"…"} or {"unanswered":"why"}`); err != nil {
		return fmt.Errorf("control: %w", err)
	}
	if !e.answer(r.PathValue("id"), a) {
		return fmt.Errorf("%w: %q was not asked of a caller, or is decided already", govern.ErrNoSuchApproval, r.PathValue("id"))
	}
	return nil
}

// callStreamed is Call for a caller with a sink for the plugin's events
// or a user who can be asked (either may be nil): events go to sink as
// they arrive, each question to ask and its answer back to the host.
func (c *Client) callStreamed(ctx context.Context, path string, args []byte, sink host.CallEvents, ask govern.Elicitor) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://toolhost"+path, bytes.NewReader(args))
	if err != nil {
		return nil, err
	}
	req.Header.Set(entryHeader, string(host.EntryOf(ctx)))
	if sink != nil {
		req.Header.Set(eventsHeader, strconv.Itoa(int(sink.LogLevel())))
	}
	if ask != nil {
		req.Header.Set(elicitHeader, "1")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, unanswered(ctx, http.MethodPost, err)
	}
	defer resp.Body.Close()
	// The questions being asked end with the call: their ctx is cancelled
	// and they are given a moment to return, so that what an Elicitor
	// does at once (a hint on a terminal) is done before the caller
	// carries on (and, for the CLI, exits).
	actx, cancelAsks := context.WithCancel(ctx)
	var asks sync.WaitGroup
	defer func() {
		cancelAsks()
		done := make(chan struct{})
		go func() { asks.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	}()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	events := 0
	for sc.Scan() {
		var line callLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("control: malformed answer (HTTP %d): %v", resp.StatusCode, err)
		}
		switch {
		case line.Event != nil:
			if events++; sink != nil && events <= maxStreamedEvents {
				passEvent(sink, *line.Event)
			}
			continue
		case line.Ask != nil:
			if ask != nil {
				asks.Go(func() { c.answerQuestion(actx, ask, *line.Ask) })
			}
			continue
		}
		if string(line.Result) == "null" {
			line.Result = nil // as do() leaves it
		}
		return line.Result, fromWire(line.Error)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("control: reading the call's answer: %w", err)
	}
	return nil, errors.New("control: the running toolhost ended the call's answer early")
}

// answerQuestion asks the caller's user and posts the answer; a question
// the user cannot be asked goes back unanswered, for an operator.
func (c *Client) answerQuestion(ctx context.Context, ask govern.Elicitor, p govern.Pending) {
	a, err := ask(ctx, p)
	ans := elicitAnswer{Approve: a.Approve, Reason: a.Reason}
	if err != nil {
		ans = elicitAnswer{Unanswered: err.Error()}
	}
	if ctx.Err() != nil {
		return // the call is over
	}
	body, _ := json.Marshal(ans)
	// An answer that does not arrive leaves the call to an operator or
	// its approval timeout, as without elicitation.
	_ = c.do(ctx, http.MethodPost, "/v1/elicitations/"+url.PathEscape(p.ID), body, nil)
}
