package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/internal/testplugins"
)

// A tool whose manifest says needs_approval (policy ask), run by the real
// runtime and its Governor, asked over 2026-07-28 by the go-sdk client:
// the approval travels as an input-required result (SEP-2322), the client's
// user answers, and only an approved call runs the plugin.
func TestMCPApprovalOverMRTR(t *testing.T) {
	h := newHostWith(t, host.Options{}, testplugins.Bundle(t, "conformance"))
	gov, err := govern.New(govern.Options{Store: h.Store(), Hooks: h.PolicyHooks, ApprovalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	h.SetGovernor(gov)
	_, srv := serve(t, h, Options{Approvals: gov.Approvals()})

	var prompts []string
	cs := connectMCPAt(t, srv, bearer{testToken, srv.Client().Transport}, "2026-07-28", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			prompts = append(prompts, req.Params.Message)
			approve := len(prompts) == 1
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve, "reason": "test"}}, nil
		},
	})

	const tool = "test_input_required_result_request_state"
	res, err := cs.CallTool(context.Background(), mcpCall(tool, map[string]any{}))
	if err != nil || res.IsError || textOf(res) != "approved: the action ran" {
		t.Fatalf("approved call: %+v, %v; want the plugin's answer", res, err)
	}
	res, err = cs.CallTool(context.Background(), mcpCall(tool, map[string]any{}))
	if err != nil || !res.IsError || !strings.HasPrefix(textOf(res), "denied: ") || strings.Contains(textOf(res), "the action ran") {
		t.Fatalf("refused call: %+v, %v; want a denied error and no plugin run", res, err)
	}
	if len(prompts) != 2 || !strings.Contains(prompts[0], tool) {
		t.Errorf("prompts %q: want one per call, naming the tool", prompts)
	}
	if n := len(gov.Approvals().List()); n != 0 {
		t.Errorf("%d approvals still pending after both answers", n)
	}
}
