package mcpserver

import (
	"context"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/internal/clip"
)

// parkSlot tells settleParked which call a tools/call request parked;
// withdraw cancels the request's round trip with the client (over when
// the request ended, retried when the SDK retried it with the user's
// answer).
type parkSlot struct {
	state    string
	pc       *parkedCall
	withdraw context.CancelFunc
	over     chan struct{}
	retried  chan struct{}
	once     sync.Once
}

// retry marks the request as retried with the user's answer: the call's
// end no longer withdraws anything (the retry's own events and answer go
// on over the request).
func (slot *parkSlot) retry() { slot.once.Do(func() { close(slot.retried) }) }

type parkSlotKey struct{}

// settleParked ends the call a tools/call request parked when the request
// itself fails. With a client before 2026-07-28 the SDK asks the user
// itself (elicitation/create) and retries the handler with the answer; when
// that round trip fails (the client answers with an error or a form that
// does not validate, or the request is cancelled), the client is told the
// call failed, and the parked call must not run later — an operator could
// otherwise still approve it. A 2026-07-28 client gets the input-required
// result without error and retries on its own; its parked call waits.
func (s *Server) settleParked(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		rctx, withdraw := context.WithCancel(ctx)
		defer withdraw()
		slot := &parkSlot{withdraw: withdraw, over: make(chan struct{}), retried: make(chan struct{})}
		res, err := next(context.WithValue(rctx, parkSlotKey{}, slot), method, req)
		close(slot.over)
		if err != nil && slot.pc != nil && ctx.Err() == nil && isDone(slot.pc) {
			// The call was decided while the client's user was still
			// asked, and the question withdrawn: the call's own
			// outcome is the answer.
			s.parked.take(slot.state)
			if creq, ok := req.(*mcp.CallToolRequest); ok {
				return s.answer(ctx, creq, slot.pc.res, slot.pc.err), nil
			}
		}
		if err != nil && slot.state != "" {
			if pc := s.parked.take(slot.state); pc != nil {
				creq, ok := req.(*mcp.CallToolRequest)
				if ok && ctx.Err() == nil {
					// The request is still wanted, but the round trip
					// with the client failed: its elicitation handler
					// failed, or its answer does not fit the form. That
					// is the client's answer, and no usable one: the
					// call is denied, saying why, and the caller gets a
					// denied result (not the SDK's bare error), audited
					// as the client's decision, not as a caller gone.
					return s.denyUnanswered(ctx, creq, pc, err), nil
				}
				pc.cancel()
			}
		}
		return res, err
	}
}

// denyUnanswered ends a parked call whose client could not give the
// approval question a usable answer (err says why) as denied by that
// client, and returns the call's result. A decision that took the call
// first (an operator's) stands: its outcome is the answer.
func (s *Server) denyUnanswered(ctx context.Context, req *mcp.CallToolRequest, pc *parkedCall, err error) *mcp.CallToolResult {
	select {
	case pc.answer <- govern.Answer{Reason: unusableAnswerReason(err)}:
	default:
	}
	<-pc.done
	pc.cancel()
	return s.answer(ctx, req, pc.res, pc.err)
}

// unusableAnswerReason is why a call whose client answered the approval
// question unusably did not run, with the SDK's account of what was wrong
// (its "multi-round-trip: fulfilling input request" wrapping left out).
func unusableAnswerReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, approvalKey+`": `); i >= 0 {
		msg = msg[i+len(approvalKey)+3:]
	}
	start, end, cut := clip.Middle(msg, 240, 120)
	if cut {
		msg = start + "…" + end
	}
	return "the MCP client gave no usable answer to the approval question (" + msg + "), so the call did not run; the client's user must answer the form {approve: true|false}"
}

func isDone(pc *parkedCall) bool {
	select {
	case <-pc.done:
		return true
	default:
		return false
	}
}
