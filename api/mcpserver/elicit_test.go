package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A backend (the approval step) asks the client's user through Elicit;
// where no one can be asked, it learns so at once.
func TestElicit(t *testing.T) {
	b := newFake(tool("delete", `{"type":"object"}`))
	b.answerCtx("delete", func(ctx context.Context, _ []byte) (json.RawMessage, error) {
		a, err := Elicit(ctx, "Allow delete?", json.RawMessage(`{"type":"object","properties":{"why":{"type":"string"}}}`))
		if errors.Is(err, ErrNoElicitation) {
			return json.RawMessage(`"nobody to ask"`), nil
		}
		if err != nil {
			return nil, err
		}
		return json.RawMessage(fmt.Sprintf("%q", a.Action+":"+fmt.Sprint(a.Content["why"]))), nil
	})
	s := New(b, "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()

	asked := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if req.Params.Message != "Allow delete?" {
			return nil, fmt.Errorf("message %q", req.Params.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"why": "cleanup"}}, nil
	}
	for _, tt := range []struct {
		name, where, version string
		handler              func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		want                 string
	}{
		{"stdio 2025-11-25", "stdio", "2025-11-25", asked, "accept:cleanup"},
		{"http 2025-11-25", srv.URL, "2025-11-25", asked, "accept:cleanup"},
		{"client without elicitation", "stdio", "2025-11-25", nil, "nobody to ask"},
		{"http 2026-07-28 (stateless)", srv.URL, "2026-07-28", asked, "nobody to ask"},
		{"stdio 2026-07-28", "stdio", "2026-07-28", asked, "nobody to ask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := connectAt(t, s, tt.where, tt.version, &mcp.ClientOptions{ElicitationHandler: tt.handler})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete"})
			if err != nil || res.IsError || textOf(res) != tt.want {
				t.Fatalf("call: %v %q, want %q", err, textOf(res), tt.want)
			}
		})
	}
	if _, err := Elicit(context.Background(), "x", nil); !errors.Is(err, ErrNoElicitation) {
		t.Errorf("Elicit outside an MCP call: %v, want ErrNoElicitation", err)
	}
}
