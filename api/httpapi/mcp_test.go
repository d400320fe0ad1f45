package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// bearer adds the API token to every request, as an MCP client
// configured with headers does.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connectMCP connects the go-sdk's own client to /mcp over streamable HTTP.
func connectMCP(t *testing.T, srv *httptest.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := &http.Client{Transport: bearer{testToken, srv.Client().Transport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "httpapi-test", Version: "0"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: client, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	// Registered after serve's cleanup, so it runs first: the server's
	// Close waits for the session's open GET stream.
	t.Cleanup(func() { cs.Close() })
	return cs
}

func mcpCall(name string, args any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: name, Arguments: args}
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestMCPOverHTTP(t *testing.T) {
	b := newFake()
	b.handle("other", func(_ context.Context, args []byte) (json.RawMessage, error) {
		return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "at '/count': got string, want integer")
	})
	_, srv := serve(t, b, Options{Version: "9.9.9"})
	notified := make(chan struct{}, 16)
	cs := connectMCP(t, srv, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		notified <- struct{}{}
	}})
	ctx := context.Background()

	if v := cs.InitializeResult().ServerInfo.Version; v != "9.9.9" {
		t.Errorf("server version = %q", v)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpNames(list.Tools); !reflect.DeepEqual(got, []string{"echo", "other", "slow"}) {
		t.Fatalf("tools = %v", got)
	}

	res, err := cs.CallTool(ctx, mcpCall("echo", map[string]any{"text": "hi"}))
	if err != nil || res.IsError || textOf(res) != `{"echo":{"text":"hi"}}` {
		t.Errorf("echo: %v %+v", err, res)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"echo":{"text":"hi"}}` {
		t.Errorf("structuredContent = %s", sc)
	}

	res, err = cs.CallTool(ctx, mcpCall("other", map[string]any{"count": "three"}))
	if err != nil || !res.IsError || textOf(res) != "invalid_arguments: at '/count': got string, want integer" {
		t.Errorf("bad arguments: %v %+v", err, res)
	}

	// An install while the session is open: the client hears of it on the
	// standalone GET stream and sees the new tool.
	b.setTools(append(b.Tools(), host.ToolInfo{Name: "zeta", Description: "new", Parameters: json.RawMessage(`{"type":"object"}`), Plugin: "z"})...)
	select {
	case <-notified:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed within 5s")
	}
	list, err = cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpNames(list.Tools); !reflect.DeepEqual(got, []string{"echo", "other", "slow", "zeta"}) {
		t.Errorf("tools after change = %v", got)
	}
	// MCP calls are counted with the rest by the host pipeline (see
	// TestEveryEntryPointCounted).
}

func mcpNames(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}
