package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// The real runtime must satisfy the consumer-side contract.
var _ Backend = (*host.Host)(nil)

// fakeBackend serves a settable tool list; Call answers from results, by
// tool name, and records the raw arguments it was given.
type fakeBackend struct {
	mu      sync.Mutex
	tools   []host.ToolInfo
	changed chan struct{}
	results map[string]func(ctx context.Context, args []byte) (json.RawMessage, error)
	args    map[string][]byte
}

func newFake(tools ...host.ToolInfo) *fakeBackend {
	return &fakeBackend{tools: tools, changed: make(chan struct{}), results: map[string]func(context.Context, []byte) (json.RawMessage, error){}, args: map[string][]byte{}}
}

func (f *fakeBackend) Tools() []host.ToolInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]host.ToolInfo(nil), f.tools...)
}

func (f *fakeBackend) Plugins() []host.PluginInfo { return nil }

func (f *fakeBackend) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeBackend) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	f.mu.Lock()
	fn := f.results[tool]
	f.args[tool] = append([]byte(nil), args...)
	f.mu.Unlock()
	if fn == nil {
		return nil, toolerr.Errorf(toolerr.CodeToolNotFound, "no tool named %q is installed", tool)
	}
	return fn(ctx, args)
}

func (f *fakeBackend) setTools(tools ...host.ToolInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools = tools
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeBackend) answer(tool string, fn func([]byte) (json.RawMessage, error)) {
	f.answerCtx(tool, func(_ context.Context, args []byte) (json.RawMessage, error) { return fn(args) })
}

func (f *fakeBackend) answerCtx(tool string, fn func(context.Context, []byte) (json.RawMessage, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results[tool] = fn
}

func (f *fakeBackend) argsOf(tool string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.args[tool]
}

// echoSchema carries keywords the SDK does not model, to show that the
// signed schema reaches clients untouched.
const echoSchema = `{"type":"object","properties":{"text":{"type":"string","maxLength":8}},"required":["text"],"additionalProperties":false,"x-vendor":{"kept":true}}`

func tool(name, schema string) host.ToolInfo {
	return host.ToolInfo{Name: name, Description: "the " + name + " tool", Parameters: json.RawMessage(schema), Plugin: "p", Version: "1.0.0"}
}

// connectIO runs the server over a pipe pair (the stdio code path) and
// returns a connected go-sdk client session.
func connectIO(t *testing.T, s *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, sr, sw) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	})
	return cs
}

func connectHTTP(t *testing.T, url string, client *http.Client, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestListAndCall(t *testing.T) {
	b := newFake(tool("echo", echoSchema), tool("fail", `{"type":"object"}`))
	b.answer("echo", func(args []byte) (json.RawMessage, error) {
		if strings.Contains(string(args), `"text":"plain"`) {
			return json.RawMessage(`"line one\nline two"`), nil
		}
		if strings.Contains(string(args), `"text":"list"`) {
			return json.RawMessage(`[1,2]`), nil
		}
		return json.RawMessage(`{"echo":true}`), nil
	})
	b.answer("fail", func([]byte) (json.RawMessage, error) { return nil, errors.New("disk on fire") })
	s := New(b, "1.2.3")
	defer s.Close()
	cs := connectIO(t, s, nil)
	ctx := context.Background()

	if got := cs.InitializeResult().ServerInfo; got.Name != "toolhost" || got.Version != "1.2.3" {
		t.Errorf("server info = %+v", got)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 2 || list.Tools[0].Name != "echo" || list.Tools[0].Description != "the echo tool" {
		t.Fatalf("tools = %+v", list.Tools)
	}
	if !sameJSON(t, list.Tools[0].InputSchema, echoSchema) {
		t.Errorf("inputSchema = %v, want the signed schema unchanged: %s", list.Tools[0].InputSchema, echoSchema)
	}

	tests := []struct {
		name       string
		tool       string
		args       any
		wantError  bool
		wantText   string
		wantStruct bool
	}{
		{"object result", "echo", map[string]any{"text": "hi"}, false, `{"echo":true}`, true},
		{"string result is unquoted", "echo", map[string]any{"text": "plain"}, false, "line one\nline two", false},
		{"array result has no structured content", "echo", map[string]any{"text": "list"}, false, `[1,2]`, false},
		{"non-host error is internal_error", "fail", map[string]any{}, true, "internal_error: disk on fire", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.wantError || textOf(res) != tt.wantText {
				t.Errorf("result = isError %v %q, want %v %q", res.IsError, textOf(res), tt.wantError, tt.wantText)
			}
			if (res.StructuredContent != nil) != tt.wantStruct {
				t.Errorf("structuredContent = %v, want present=%v", res.StructuredContent, tt.wantStruct)
			}
		})
	}
}

// Arguments the schema rejects must reach the backend unvalidated, and the
// host's own invalid_arguments message must come back as an isError result.
func TestArgumentsPassThroughToHostValidation(t *testing.T) {
	b := newFake(tool("echo", echoSchema))
	b.answer("echo", func(args []byte) (json.RawMessage, error) {
		return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "at '/text': got number, want string")
	})
	s := New(b, "dev")
	defer s.Close()
	cs := connectIO(t, s, nil)

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": 42, "extra": true}})
	if err != nil {
		t.Fatalf("CallTool: %v (the SDK must not reject arguments itself)", err)
	}
	if !res.IsError || textOf(res) != "invalid_arguments: at '/text': got number, want string" {
		t.Errorf("result = isError %v %q", res.IsError, textOf(res))
	}
	if !sameJSON(t, json.RawMessage(b.argsOf("echo")), `{"text":42,"extra":true}`) {
		t.Errorf("backend got %s", b.argsOf("echo"))
	}
}

// An error the SDK answers with quotes what it refuses, bounded: a
// request for a tool with a 100 KB name gets a JSON-RPC error of at most
// toolerr.MaxMessageBytes, with the start and end of the name.
func TestErrorsAreBounded(t *testing.T) {
	s := New(newFake(tool("echo", echoSchema)), "dev")
	defer s.Close()
	cs := connectIO(t, s, nil)
	name := "n" + strings.Repeat("x", 100_000) + "z"
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("CallTool(unknown tool) = %v (%T), want a JSON-RPC error", err, err)
	}
	if len(we.Message) > toolerr.MaxMessageBytes+64 || !strings.Contains(we.Message, `unknown tool "nxxx`) || !strings.Contains(we.Message, `xxz"`) || !strings.Contains(we.Message, "bytes cut") {
		t.Errorf("error message of %d bytes: %.120q…", len(we.Message), we.Message)
	}
}

func TestToolListFollowsBackend(t *testing.T) {
	b := newFake(tool("a", `{"type":"object"}`))
	s := New(b, "dev")
	defer s.Close()
	notified := make(chan struct{}, 16)
	cs := connectIO(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		notified <- struct{}{}
	}})
	waitTools(t, cs, notified, "a")

	b.setTools(tool("b", `{"type":"object"}`), tool("c", `{"type":"object"}`))
	waitNotified(t, notified)
	waitTools(t, cs, notified, "b", "c")

	// A changed definition (same name) is re-sent.
	b.setTools(host.ToolInfo{Name: "b", Description: "new words", Parameters: json.RawMessage(`{"type":"object"}`)})
	waitNotified(t, notified)
	waitFor(t, cs, notified, func(tools []*mcp.Tool) bool {
		return len(tools) == 1 && tools[0].Description == "new words"
	})
}

// Definitions the SDK would panic on are left out; the rest are served.
func TestBadDefinitionsAreLeftOut(t *testing.T) {
	b := newFake(
		tool("array_root", `{"type":"array"}`),
		tool("bad_header", `{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"X-Bad"}}}`),
		tool("fine", `{"type":"object"}`),
		tool("not_json", `{`),
	)
	s := New(b, "dev")
	defer s.Close()
	cs := connectIO(t, s, nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(list.Tools); !reflect.DeepEqual(names, []string{"fine"}) {
		t.Errorf("tools = %v, want [fine]", names)
	}
}

// Streamable HTTP through a server whose ReadTimeout is shorter than a call
// and whose WriteTimeout is shorter than the wait for a notification: the
// call must be answered and list_changed must still arrive on the GET stream.
func TestStreamableHTTPOutlivesServerTimeouts(t *testing.T) {
	b := newFake(tool("slow", `{"type":"object"}`))
	b.answer("slow", func([]byte) (json.RawMessage, error) {
		time.Sleep(400 * time.Millisecond)
		return json.RawMessage(`{"done":true}`), nil
	})
	s := New(b, "dev")
	defer s.Close()
	srv := httptest.NewUnstartedServer(s.Handler(HTTPOptions{}))
	srv.Config.ReadTimeout = 150 * time.Millisecond
	srv.Config.WriteTimeout = 600 * time.Millisecond
	// As serve's server has (httpapi.NewServer): without it the idle
	// timeout is the ReadTimeout, and a keep-alive connection idle for
	// 150 ms on a loaded machine is closed as the client reuses it for
	// the call (a POST is not retried: "Post …: EOF").
	srv.Config.IdleTimeout = time.Minute
	srv.Start()
	t.Cleanup(srv.Close) // after the client session's cleanup

	notified := make(chan struct{}, 16)
	cs := connectHTTP(t, srv.URL, srv.Client(), &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		notified <- struct{}{}
	}})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"})
	if err != nil || res.IsError || textOf(res) != `{"done":true}` {
		t.Fatalf("slow call: %v %+v", err, res)
	}
	time.Sleep(900 * time.Millisecond) // past WriteTimeout for the GET stream
	b.setTools(tool("slow", `{"type":"object"}`), tool("new", `{"type":"object"}`))
	waitNotified(t, notified)
	waitTools(t, cs, notified, "new", "slow")
}

func TestHTTPHostProtection(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	for _, tt := range []struct {
		name        string
		hostChecked bool
		want        int
	}{
		{"SDK check on by default", false, http.StatusForbidden},
		{"off when the caller checks", true, http.StatusBadRequest}, // past the check: no session id
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(s.Handler(HTTPOptions{HostChecked: tt.hostChecked}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Host = "attacker.example:80"
			req.Header.Set("Accept", "text/event-stream")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

func TestHTTPBodyCap(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{MaxBodyBytes: 64}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", 100)+`"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413", resp.StatusCode)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	s := New(newFake(), "dev")
	s.Close()
	s.Close()
}

func waitNotified(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed within 5s")
	}
}

// waitTools lists tools until they are want: notifications are debounced,
// so one may arrive before the last of a batch of changes.
func waitTools(t *testing.T, cs *mcp.ClientSession, notified <-chan struct{}, want ...string) {
	t.Helper()
	waitFor(t, cs, notified, func(tools []*mcp.Tool) bool { return reflect.DeepEqual(toolNames(tools), want) })
}

func waitFor(t *testing.T, cs *mcp.ClientSession, notified <-chan struct{}, ok func([]*mcp.Tool) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if ok(list.Tools) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools never as expected; last: %v", toolNames(list.Tools))
		}
		select {
		case <-notified:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
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

func sameJSON(t *testing.T, got any, want string) bool {
	t.Helper()
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}

// A tools/call for a tool that does not exist reaches the backend, whose
// pipeline records it as every entry point's, and is answered as the SDK
// would (invalid params). A tool the backend has but MCP left out (a
// definition the SDK refuses) is not called.
func TestUnknownToolReachesTheBackend(t *testing.T) {
	b := newFake(tool("echo", echoSchema), tool("odd", `{"type":"array"}`))
	b.answer("odd", func([]byte) (json.RawMessage, error) { return json.RawMessage(`"ran"`), nil })
	s := New(b, "dev")
	defer s.Close()
	cs := connectIO(t, s, nil)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{"a": 1}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, `unknown tool "nope"`) {
		t.Fatalf("CallTool(nope) = %v, want invalid params naming the tool", err)
	}
	if got := string(b.argsOf("nope")); got != `{"a":1}` {
		t.Errorf("the backend saw %q for nope, want the call with its arguments", got)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "odd"}); err == nil {
		t.Error("a tool MCP left out was called")
	}
	if b.argsOf("odd") != nil {
		t.Error("the backend ran a tool MCP left out")
	}
}
