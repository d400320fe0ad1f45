package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/plugin"
)

func TestToolListCarriesAnnotationsAndOutputSchema(t *testing.T) {
	del := tool("delete_note", `{"type":"object"}`)
	del.OutputSchema = json.RawMessage(`{"type":"object","properties":{"deleted":{"type":"boolean"}}}`)
	del.Annotations = &plugin.Annotations{Title: "Delete a note", Destructive: true, Idempotent: true}
	clock := tool("clock", `{"type":"object"}`)
	clock.Icon = clockIcon
	s := New(newFake(del, clock, tool("plain", `{"type":"object"}`)), "1")
	defer s.Close()
	cs := connectIO(t, s, nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		switch tl.Name {
		case "clock":
			if len(tl.Icons) != 1 || tl.Icons[0].Source != clockIcon || tl.Icons[0].MIMEType != "image/png" ||
				len(tl.Icons[0].Sizes) != 1 || tl.Icons[0].Sizes[0] != "32x32" {
				t.Errorf("clock icons = %+v", tl.Icons)
			}
		case "delete_note":
			a := tl.Annotations
			if tl.Title != "Delete a note" || a == nil || a.Title != "Delete a note" || a.DestructiveHint == nil || !*a.DestructiveHint ||
				!a.IdempotentHint || a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
				t.Errorf("delete_note: title %q annotations %+v", tl.Title, a)
			}
			if !sameJSON(t, tl.OutputSchema, string(del.OutputSchema)) {
				t.Errorf("outputSchema = %v", tl.OutputSchema)
			}
		case "plain":
			if tl.Annotations != nil || tl.OutputSchema != nil || tl.Icons != nil {
				t.Errorf("plain tool got annotations %+v / outputSchema %v / icons %v", tl.Annotations, tl.OutputSchema, tl.Icons)
			}
		}
	}
}

// A call that waits for approval asks the MCP client's user; the answer
// decides. The backend here asks a real govern.Approvals, as the host's
// Governor does.
func TestElicitationDecidesApproval(t *testing.T) {
	approvals := &govern.Approvals{Timeout: time.Minute}
	b := &askingBackend{fakeBackend: newFake(tool("delete_note", `{"type":"object"}`)), approvals: approvals}
	s := New(b, "1")
	defer s.Close()
	var asked string
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = req.Params.Message
		approve := strings.Contains(req.Params.Message, `"id":"1"`)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve, "reason": "checked"}}, nil
	}}
	cs := connectIO(t, s, opts)
	for _, tc := range []struct{ args, want string }{
		{`{"id":"1"}`, `{"approved":true,"by":"mcp-client","reason":"checked"}`},
		{`{"id":"2"}`, `{"approved":false,"by":"mcp-client","reason":"checked"}`},
	} {
		var args map[string]any
		json.Unmarshal([]byte(tc.args), &args)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(res); got != tc.want {
			t.Errorf("call %s: %s, want %s", tc.args, got, tc.want)
		}
		if !strings.Contains(asked, "delete_note") || !strings.Contains(asked, tc.args) {
			t.Errorf("elicitation message does not show tool and arguments: %q", asked)
		}
	}
}

// askingBackend answers every call by asking for approval, and reports the
// outcome as the result.
type askingBackend struct {
	*fakeBackend
	approvals *govern.Approvals
}

// askingHTTP serves the tools named over MCP (stdio through s, HTTP at
// url), each call asking approvals; everything stops at the test's end.
func askingHTTP(t *testing.T, tools ...string) (s *Server, url string, approvals *govern.Approvals) {
	t.Helper()
	approvals = &govern.Approvals{Timeout: time.Minute}
	var ts []host.ToolInfo
	for _, name := range tools {
		ts = append(ts, tool(name, `{"type":"object"}`))
	}
	s = New(&askingBackend{fakeBackend: newFake(ts...), approvals: approvals}, "1")
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(srv.Close)
	t.Cleanup(s.CloseSessions)
	return s, srv.URL, approvals
}

func (b *askingBackend) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	out, err := b.approvals.Ask(ctx, govern.Pending{Tool: tool, Plugin: "notes", Arguments: args})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"approved": out.Approve, "by": out.By, "reason": out.Reason})
}

// A client without the elicitation capability is not asked: the call waits
// for an operator.
func TestNoElicitationWaitsForOperator(t *testing.T) {
	approvals := &govern.Approvals{Timeout: time.Minute}
	b := &askingBackend{fakeBackend: newFake(tool("delete_note", `{"type":"object"}`)), approvals: approvals}
	s := New(b, "1")
	defer s.Close()
	cs := connectIO(t, s, nil)
	go func() {
		for {
			if ps := approvals.List(); len(ps) > 0 {
				approvals.Decide(ps[0].ID, true, "ok by ops", "cli")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"id": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(res); got != `{"approved":true,"by":"operator","reason":"ok by ops"}` {
		t.Errorf("result = %s", got)
	}
}

// clockIcon is a 32×32 PNG, as the time sample ships.
const clockIcon = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAYAAABzenr0AAAAv0lEQVR4nOyXyQ3CMBBFYUQ30AsUAtVAIdAL1AMSkiWkzEpmO/hfY/33YjtOApvi7CyD9+f7WzPudTtttZ3iQC30Xxl2CdbCNR2kgAdc04UKWODP63GVxELA88413ZAFpxiQCcdY5QdRD4HM6R8ZzB4zMAUqY3odU+GO48PlESsgAaSUL8EU+ApYvuG8Mpg9ZqCFQOYy/LKAupABXwhES2Dd6B6IkKA6yU3oKcF1sU+Bh4TUYQJE/JyW5xMAAP//1TpKQ05ASVcAAAAASUVORK5CYII="
