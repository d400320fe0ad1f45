package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/content"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/internal/clip"
)

// Approval through elicitation. MCP (2026-07-28, SEP-2322 "multi round-trip
// requests") forbids a server to send elicitation/create while it serves a
// request; the handler answers with an input-required result instead, and
// the client retries the call with the user's answer. For older clients the
// SDK does that round trip itself (elicits, then calls the handler again
// with the answer), so one path serves both revisions.
//
// The first invocation starts the call. When the host's Governor asks for
// approval, the call is parked (detached from this request) and the handler
// answers with an approval form under the key "approval" and a requestState:
// a fresh 128-bit random token that names the parked call. The parked call
// keeps waiting in the host's approvals, where an operator or the timeout
// can still decide. The retry carries the form's answer: it is handed to
// the parked call, whose result the retry returns.
//
// The requestState is the only way to answer through MCP, so it is checked
// before anything else: a state this server did not issue (tampered,
// expired, already used), one from another 2025-11-25 session, or one sent
// with another tool name or other arguments than the parked call's gets a
// JSON-RPC invalid-params error and leaves the parked call to its caller. A
// retry without an answer for "approval" gets the same form again (SEP-2322
// asks to re-request missing input, not to fail).

// maxParked bounds the calls one server keeps parked for an answer.
const maxParked = 64

// parkedKeep is how long a parked call's result is kept for a retry that
// has not come.
const parkedKeep = 2 * time.Minute

// approvalKey names the approval form in inputRequests and inputResponses.
const approvalKey = "approval"

// approvalForm is the elicitation form: the message names the tool and its
// arguments; the user approves or not, and may say why.
var approvalForm = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Run this tool call?", "description": "Yes runs the call with exactly these arguments; no refuses it."},
		"reason":  map[string]any{"type": "string", "title": "Reason (optional)", "maxLength": 500},
	},
	"required": []string{"approve"},
}

type parkedCall struct {
	state   string // the requestState that names it; set before the call is marked parked
	ask     *mcp.ElicitParams
	session *mcp.ServerSession
	tool    string
	args    json.RawMessage
	answer  chan govern.Answer // buffered 1
	cancel  context.CancelFunc
	done    chan struct{}
	res     []byte
	err     error

	// events carries the plugin's lines and progress to the request that
	// waits for the call: the first until it is parked, then the retry
	// (nil: the first request asked for none).
	events *switchSink
	// The first request's progress stream, stopped when it was parked
	// (guarded by parking.mu): a retry with the same token continues
	// from last, so a client sees one rising sequence.
	progressToken any
	progressLast  float64
}

// switchSink forwards a call's events to the sink of the request that
// currently waits for it, if any; the level is the first request's (the
// sandbox reads it once, when the call starts), and a later sink gets only
// the lines it wants.
type switchSink struct {
	level host.LogLevel
	mu    sync.Mutex
	to    host.CallEvents
}

func (w *switchSink) LogLevel() host.LogLevel { return w.level }

func (w *switchSink) Log(level host.LogLevel, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.to != nil && level >= w.to.LogLevel() {
		w.to.Log(level, text)
	}
}

func (w *switchSink) Progress(p host.Progress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.to != nil {
		w.to.Progress(p)
	}
}

// set points the sink at to (nil: nobody waits; events are dropped).
func (w *switchSink) set(to host.CallEvents) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.to = to
}

type parking struct {
	mu    sync.Mutex
	calls map[string]*parkedCall // by requestState
}

func (p *parking) add(id string, c *parkedCall) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[string]*parkedCall{}
	}
	if len(p.calls) >= maxParked {
		return false
	}
	p.calls[id] = c
	return true
}

// takeSession removes and returns the calls parked by session id.
func (p *parking) takeSession(id string) []*parkedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*parkedCall
	for state, c := range p.calls {
		if c.session != nil && c.session.ID() == id {
			out = append(out, c)
			delete(p.calls, state)
		}
	}
	return out
}

func (p *parking) take(id string) *parkedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[id]
	delete(p.calls, id)
	return c
}

// takeIf removes and returns the call parked under state when ok accepts
// it; a call ok refuses stays parked for its own caller.
func (p *parking) takeIf(state string, ok func(*parkedCall) bool) *parkedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[state]
	if c == nil || !ok(c) {
		return nil
	}
	delete(p.calls, state)
	return c
}

// noteProgress records where the progress stream of the request that
// parked the call under state stopped.
func (p *parking) noteProgress(state string, token any, last float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.calls[state]; c != nil {
		c.progressToken, c.progressLast = token, last
	}
}

// progressFrom is where a retry's progress stream for token goes on:
// where the parked call's first request left it, when the retry names that
// call and sends the same token (ok false: a stream of its own).
func (p *parking) progressFrom(state string, token any) (last float64, ok bool) {
	if state == "" {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.calls[state]; c != nil && c.progressToken != nil && reflect.DeepEqual(c.progressToken, token) {
		return c.progressLast, true
	}
	return 0, false
}

// newRequestState returns an unguessable token for a parked call.
func newRequestState() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

// callGoverned runs a tools/call, parking it for the user's answer when it
// needs approval and the client can be asked.
func (s *Server) callGoverned(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	if p.RequestState != "" {
		return s.resume(ctx, req)
	}
	if !canElicit(req.Session) {
		res, err := s.b.Call(ctx, p.Name, p.Arguments)
		return s.answer(ctx, req, res, err), nil
	}
	// The call runs on a context that the request's end cancels only until
	// the call is parked.
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pc := &parkedCall{session: req.Session, tool: p.Name, args: bytes.Clone(p.Arguments), answer: make(chan govern.Answer, 1), cancel: cancel, done: make(chan struct{})}
	if ev := host.CallEventsOf(ctx); ev != nil {
		pc.events = &switchSink{level: ev.LogLevel(), to: ev}
		callCtx = host.WithCallEvents(callCtx, pc.events)
	}
	var parked atomic.Bool
	asks := make(chan struct{}, 1)
	elicit := func(ectx context.Context, pend govern.Pending) (govern.Answer, error) {
		pc.state = newRequestState()
		pc.ask = &mcp.ElicitParams{
			Mode:            "form",
			Message:         fmt.Sprintf("toolhost needs your approval to run the tool %s (plugin %s) with the arguments %s", pend.Tool, pend.Plugin, pend.Arguments),
			RequestedSchema: approvalForm,
		}
		if !s.parked.add(pc.state, pc) {
			return govern.Answer{}, errors.New("too many calls wait for their client's answer")
		}
		parked.Store(true)
		asks <- struct{}{}
		select {
		case a := <-pc.answer:
			return a, nil
		case <-ectx.Done():
			return govern.Answer{}, ectx.Err()
		}
	}
	go func() {
		defer close(pc.done)
		pc.res, pc.err = s.b.Call(govern.WithElicitor(callCtx, elicit), p.Name, p.Arguments)
	}()
	go func() {
		select {
		case <-ctx.Done():
			if !parked.Load() {
				cancel()
			}
		case <-pc.done:
		}
	}()
	select {
	case <-pc.done:
		// Decided (by an operator) before the client was asked.
		cancel()
		if parked.Load() {
			s.parked.take(pc.state)
		}
		return s.answer(ctx, req, pc.res, pc.err), nil
	case <-asks:
		if slot, ok := ctx.Value(parkSlotKey{}).(*parkSlot); ok {
			slot.state, slot.pc = pc.state, pc
			go func() {
				// Decided without the user (an operator, a deny rule,
				// the timeout, shutdown): withdraw the question the
				// SDK's round trip may have open with the client.
				select {
				case <-pc.done:
					slot.withdraw()
				case <-slot.retried: // the user answered
				case <-slot.over:
				}
			}()
		}
		pc.events.set(nil) // this request ends; the retry takes over
		go func() {
			<-pc.done
			cancel()
			time.AfterFunc(parkedKeep, func() { s.parked.take(pc.state) })
		}()
		return inputRequired(pc), nil
	}
}

// inputRequired is the answer that asks the client for approval.
func inputRequired(pc *parkedCall) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalKey: pc.ask}, RequestState: pc.state}
}

// resume hands the user's answer to the parked call and returns its result.
func (s *Server) resume(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	if slot, ok := ctx.Value(parkSlotKey{}).(*parkSlot); ok && slot.state == p.RequestState {
		slot.retry()
	}
	answer, answered := p.InputResponses[approvalKey].(*mcp.ElicitResult)
	var again *mcp.CallToolResult
	pc := s.parked.takeIf(p.RequestState, func(pc *parkedCall) bool {
		if !sameSession(pc.session, req.Session) || pc.tool != p.Name || !sameArguments(pc.args, p.Arguments) {
			return false
		}
		if !answered && !isDone(pc) {
			again = inputRequired(pc) // stays parked
			return false
		}
		return true // answered, or decided already: nothing to ask
	})
	if again != nil {
		return again, nil
	}
	if pc == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"requestState is not one this server issued for this call of %s: it was altered, has expired or been used, belongs to another session, or came with other arguments; call %s again without requestState", p.Name, p.Name)}
	}
	pc.events.set(host.CallEventsOf(ctx))
	defer pc.events.set(nil)
	if answered {
		select {
		case pc.answer <- elicitAnswer(answer):
		default:
		}
	}
	select {
	case <-pc.done:
		return s.answer(ctx, req, pc.res, pc.err), nil
	case <-ctx.Done():
		pc.cancel()
		<-pc.done
		return s.answer(ctx, req, pc.res, pc.err), nil
	}
}

// sameArguments reports whether two argument objects are equal as JSON values
// (a client may re-encode them for the retry); absent counts as {}.
func sameArguments(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if len(bytes.TrimSpace(a)) == 0 {
		a = json.RawMessage(`{}`)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = json.RawMessage(`{}`)
	}
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// sameSession reports whether a retry comes from the session that made the
// parked call. Over 2025-11-25 sessions it must be the same session. A
// 2026-07-28 (stateless) request has a session of its own per request, so
// there the unguessable approval ID in requestState, which only the caller
// that got it back can hold, is what ties the retry to the call (the
// caller is authenticated by the API token either way).
func sameSession(parked, retry *mcp.ServerSession) bool {
	if parked == retry {
		return true
	}
	if parked == nil || retry == nil {
		return false
	}
	return parked.ID() == retry.ID()
}

func elicitAnswer(r *mcp.ElicitResult) govern.Answer {
	reason, _ := r.Content["reason"].(string)
	switch r.Action {
	case "accept":
		approve, ok := r.Content["approve"].(bool)
		if !ok {
			// Not the form's answer: no yes from anyone, and not a no
			// from the user either; say what came instead.
			got, _ := json.Marshal(r.Content["approve"])
			start, end, cut := clip.Middle(string(got), 60, 20)
			if cut {
				got = []byte(start + "…" + end)
			}
			return govern.Answer{Reason: fmt.Sprintf("the MCP client gave no usable answer to the approval question (approve was %s, not true or false), so the call did not run; the client's user must answer the form {approve: true|false}", got)}
		}
		if !approve && reason == "" {
			reason = "the user answered no"
		}
		return govern.Answer{Approve: approve, Reason: reason}
	case "decline":
		if reason == "" {
			reason = "the user declined"
		}
		return govern.Answer{Reason: reason}
	}
	return govern.Answer{Reason: "the user dismissed the approval request"}
}

// answer converts a call's outcome to its result, and logs it to the
// session (logEnd).
func (s *Server) answer(ctx context.Context, req *mcp.CallToolRequest, res []byte, err error) *mcp.CallToolResult {
	var blocks []content.Block
	isEnvelope := false
	if err == nil {
		blocks, isEnvelope, err = content.Parse(res)
	}
	s.logEnd(ctx, req, err)
	switch {
	case err != nil:
		return errorResult(err)
	case isEnvelope:
		return &mcp.CallToolResult{Content: mcpContent(blocks)}
	}
	return successResult(res)
}
