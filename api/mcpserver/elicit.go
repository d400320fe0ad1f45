package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/govern"
)

// approvalForm is the elicitation form of a call that waits for approval:
// the message names the tool and its arguments; the user approves or not,
// and may say why.
var approvalForm = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Run this tool call?", "description": "Yes runs the call with exactly these arguments; no refuses it."},
		"reason":  map[string]any{"type": "string", "title": "Reason (optional)", "maxLength": 500},
	},
	"required": []string{"approve"},
}

// withElicitation lets a call that waits for approval ask the user of the
// MCP client that made it (elicitation/create), when that client declared
// the elicitation capability. A client without it cannot be asked: the
// call then waits for an operator (toolhost approvals).
func withElicitation(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	return govern.WithElicitor(ctx, func(ctx context.Context, p govern.Pending) (govern.Answer, error) {
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{
			Mode:            "form",
			Message:         fmt.Sprintf("toolhost needs your approval to run the tool %s (plugin %s) with the arguments %s", p.Tool, p.Plugin, p.Arguments),
			RequestedSchema: approvalForm,
		})
		if err != nil {
			return govern.Answer{}, err
		}
		reason, _ := res.Content["reason"].(string)
		switch res.Action {
		case "accept":
			approve, _ := res.Content["approve"].(bool)
			if !approve && reason == "" {
				reason = "the user answered no"
			}
			return govern.Answer{Approve: approve, Reason: reason}, nil
		case "decline":
			return govern.Answer{Reason: "the user declined"}, nil
		}
		return govern.Answer{Reason: "the user dismissed the approval request"}, nil
	})
}
