package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/content"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
)

// Approval through elicitation. MCP (2026-07-28, SEP-2322) forbids a server
// to send elicitation/create while it serves a request; the handler answers
// with an input request instead, and the client retries the call with the
// user's answer. For older clients the SDK does that round trip itself
// (elicits, then calls the handler again with the answer), so one path
// serves both.
//
// The first invocation starts the call. When the host's Governor asks for
// approval, the call is parked (detached from this request) and the handler
// answers with an approval form; the parked call keeps waiting in the
// host's approvals, where an operator or the timeout can still decide. The
// retry carries the form's answer: it is handed to the parked call, whose
// result the retry returns.

// maxParked bounds the calls one server keeps parked for an answer.
const maxParked = 64

// parkedKeep is how long a parked call's result is kept for a retry that
// has not come.
const parkedKeep = 2 * time.Minute

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
	id      string // set before the call is marked parked
	session *mcp.ServerSession
	tool    string
	answer  chan govern.Answer // buffered 1
	cancel  context.CancelFunc
	done    chan struct{}
	res     []byte
	err     error
}

type parking struct {
	mu    sync.Mutex
	calls map[string]*parkedCall // by approval ID
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

func (p *parking) take(id string) *parkedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[id]
	delete(p.calls, id)
	return c
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
	pc := &parkedCall{session: req.Session, tool: p.Name, answer: make(chan govern.Answer, 1), cancel: cancel, done: make(chan struct{})}
	var parked atomic.Bool
	asks := make(chan govern.Pending, 1)
	elicit := func(ectx context.Context, pend govern.Pending) (govern.Answer, error) {
		if !s.parked.add(pend.ID, pc) {
			return govern.Answer{}, errors.New("too many calls wait for their client's answer")
		}
		pc.id = pend.ID
		parked.Store(true)
		asks <- pend
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
			s.parked.take(pc.id)
		}
		return s.answer(ctx, req, pc.res, pc.err), nil
	case pend := <-asks:
		go func() {
			<-pc.done
			cancel()
			time.AfterFunc(parkedKeep, func() { s.parked.take(pend.ID) })
		}()
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{pend.ID: &mcp.ElicitParams{
				Mode:            "form",
				Message:         fmt.Sprintf("toolhost needs your approval to run the tool %s (plugin %s) with the arguments %s", pend.Tool, pend.Plugin, pend.Arguments),
				RequestedSchema: approvalForm,
			}},
			RequestState: pend.ID,
		}, nil
	}
}

// resume hands the user's answer to the parked call and returns its result.
func (s *Server) resume(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	pc := s.parked.take(p.RequestState)
	if pc == nil || !sameSession(pc.session, req.Session) || pc.tool != p.Name {
		return errorResult(toolerr.Errorf(toolerr.CodeDenied, "this approval request is unknown or expired (it was decided, timed out or belongs to another session); call %s again", p.Name)), nil
	}
	a := govern.Answer{Reason: "the client did not answer the approval request"}
	if r, ok := p.InputResponses[p.RequestState].(*mcp.ElicitResult); ok {
		a = elicitAnswer(r)
	}
	select {
	case pc.answer <- a:
	default:
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
		approve, _ := r.Content["approve"].(bool)
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
