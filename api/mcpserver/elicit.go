package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrNoElicitation means the call Elicit was asked about cannot reach a
// person through its MCP client: it did not come through MCP, the client
// did not declare the elicitation capability, or it came as a 2026-07-28
// request (stateless: the server cannot send the client a request; the
// revision's multi-round-trip results are not wired up yet). The caller
// then decides another way (approvals wait for the operator).
var ErrNoElicitation = errors.New("mcpserver: the caller's MCP client cannot be asked (no elicitation capability, or a 2026-07-28 request)")

// Answer is what the client's user said.
type Answer struct {
	// Action is "accept", "decline" or "cancel" (the user dismissed it).
	Action string
	// Content holds the accepted form's values, checked by the client
	// against the requested schema; nil unless Action is "accept".
	Content map[string]any
}

type sessionKey struct{}

// Elicit asks the user of the MCP client behind a tool call a question,
// with a form whose fields schema describes (a flat JSON Schema object of
// primitive properties, as MCP elicitation allows; nil for none). ctx must
// be the ctx a Backend's Call received from this package (or derived from
// it). It blocks until the user answers or ctx ends; bound it with the
// approval timeout. Safe for concurrent use.
func Elicit(ctx context.Context, message string, schema json.RawMessage) (Answer, error) {
	ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession)
	if ss == nil {
		return Answer{}, ErrNoElicitation
	}
	init := ss.InitializeParams()
	if init == nil || init.Capabilities == nil || init.Capabilities.Elicitation == nil || init.ProtocolVersion >= statelessRevision {
		return Answer{}, ErrNoElicitation
	}
	p := &mcp.ElicitParams{Message: message}
	if len(schema) > 0 {
		p.RequestedSchema = schema
	} else {
		p.RequestedSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	res, err := ss.Elicit(ctx, p)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Action: res.Action, Content: res.Content}, nil
}
