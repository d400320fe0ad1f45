package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unusableAnswers are elicitation answers that do not answer the approval
// form: the wrong type, no answer at all, and a client whose elicitation
// handler fails.
var unusableAnswers = []struct {
	name   string
	answer func() (*mcp.ElicitResult, error)
	says   string // in the reason the call gets
}{
	{"approve is a string", func() (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": "yes"}}, nil
	}, "approve"},
	{"no approve", func() (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"reason": "looks fine"}}, nil
	}, "approve"},
	{"the handler fails", func() (*mcp.ElicitResult, error) {
		return nil, errors.New("the client's form broke")
	}, "form broke"},
}

// A client that answers the approval question with something that is not
// the form's answer (or fails to ask its user) gets a denied result that
// says so, on stdio and HTTP: before, a 2025-11-25 client got the SDK's
// bare JSON-RPC error (code 0, "multi-round-trip: fulfilling input
// request …") and the call was audited as cancelled by its caller, though
// the caller was there and its client had answered.
func TestUnusableElicitationAnswerDenies(t *testing.T) {
	s, url, approvals := askingHTTP(t, "delete_note")
	for _, where := range []string{"stdio", url} {
		over := "http"
		if where == "stdio" {
			over = where
		}
		for _, tc := range unusableAnswers {
			t.Run(over+"/"+tc.name, func(t *testing.T) {
				opts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return tc.answer()
				}}
				cs := connectAt(t, s, where, "2025-11-25", opts)
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"id": "1"}})
				if err != nil {
					t.Fatalf("%s: the call failed with %v; want a denied result", where, err)
				}
				checkUnusable(t, textOf(res), tc.says)
				if n := len(approvals.List()); n != 0 {
					t.Errorf("%d approvals still pending; an operator could run a call whose caller was told it did not", n)
				}
			})
		}
	}

	// 2026-07-28: the client retries with the answer itself; one that does
	// not fit the form is not a "no" from the user either.
	for _, content := range []map[string]any{{"approve": "yes"}, {}, {"approve": nil}} {
		args := map[string]any{"id": "2"}
		_, msg := statelessCall(t, url, "delete_note", map[string]any{"arguments": args})
		state, _ := resultOf(t, msg)["requestState"].(string)
		answer := map[string]any{approvalKey: map[string]any{"action": "accept", "content": content}}
		_, msg = statelessCall(t, url, "delete_note", map[string]any{"arguments": args, "requestState": state, "inputResponses": answer})
		blocks, _ := resultOf(t, msg)["content"].([]any)
		if len(blocks) != 1 {
			t.Fatalf("answer %v: %v; want one content block", content, msg)
		}
		text, _ := blocks[0].(map[string]any)["text"].(string)
		checkUnusable(t, text, "approve")
	}
}

func checkUnusable(t *testing.T, text, says string) {
	t.Helper()
	var out struct {
		Approved bool
		By       string
		Reason   string
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("result %q: %v", text, err)
	}
	if out.Approved || out.By != "mcp-client" || !strings.Contains(out.Reason, "no usable answer to the approval question") ||
		!strings.Contains(out.Reason, says) || strings.Contains(out.Reason, "multi-round-trip") || strings.Contains(out.Reason, "the user answered no") {
		t.Errorf("result %s; want not approved, by mcp-client, saying the client's answer was not usable (%q)", text, says)
	}
}
