package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const envelope = `{"toolhost_content":[
  {"type":"text","text":"three blocks"},
  {"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
  {"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},
  {"type":"resource_link","uri":"file:///out.csv","name":"out.csv"},
  {"type":"resource","resource":{"uri":"test://doc","mimeType":"text/plain","text":"body"}}
]}`

// A result in the toolhost_content envelope reaches an MCP client as
// those content blocks, with no structuredContent; a malformed envelope is
// a tool error naming the problem.
func TestEnvelopeBecomesContentBlocks(t *testing.T) {
	b := newFake(tool("multi", `{"type":"object"}`), tool("broken", `{"type":"object"}`))
	b.answer("multi", func([]byte) (json.RawMessage, error) { return json.RawMessage(envelope), nil })
	b.answer("broken", func([]byte) (json.RawMessage, error) {
		return json.RawMessage(`{"toolhost_content":[{"type":"image","data":"not base64!","mimeType":"image/png"}]}`), nil
	})
	s := New(b, "1")
	defer s.Close()
	cs := connectIO(t, s, nil)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "multi", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.StructuredContent != nil || len(res.Content) != 5 {
		t.Fatalf("result = isError %v, structured %v, %d blocks; want 5 blocks", res.IsError, res.StructuredContent, len(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "three blocks" {
		t.Errorf("block 0 = %#v", res.Content[0])
	}
	if ic, ok := res.Content[1].(*mcp.ImageContent); !ok || ic.MIMEType != "image/png" || !strings.HasPrefix(string(ic.Data), "\x89PNG") {
		t.Errorf("block 1 = %#v, want the decoded PNG bytes", res.Content[1])
	}
	if ac, ok := res.Content[2].(*mcp.AudioContent); !ok || ac.MIMEType != "audio/wav" || string(ac.Data) != "RIFF" {
		t.Errorf("block 2 = %#v", res.Content[2])
	}
	if rl, ok := res.Content[3].(*mcp.ResourceLink); !ok || rl.URI != "file:///out.csv" || rl.Name != "out.csv" {
		t.Errorf("block 3 = %#v", res.Content[3])
	}
	if er, ok := res.Content[4].(*mcp.EmbeddedResource); !ok || er.Resource.URI != "test://doc" || er.Resource.Text != "body" || er.Resource.MIMEType != "text/plain" {
		t.Errorf("block 4 = %#v", res.Content[4])
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "broken", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(res); !res.IsError || !strings.HasPrefix(got, "plugin_error: ") || !strings.Contains(got, "block 0: image block") || !strings.Contains(got, "base64") {
		t.Errorf("malformed envelope = isError %v %q; want a plugin_error naming block 0 and base64", res.IsError, got)
	}
}
