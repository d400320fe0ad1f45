package httpapi

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/signing"
)

// The real runtime must satisfy the consumer-side contract.
var _ Backend = (*host.Host)(nil)

type callFunc func(ctx context.Context, args []byte) (json.RawMessage, error)

// fakeBackend serves a settable tool list and answers calls with per-tool
// functions; it records the raw arguments of the last call of each tool.
type fakeBackend struct {
	mu      sync.Mutex
	tools   []host.ToolInfo
	plugins []host.PluginInfo
	funcs   map[string]callFunc
	args    map[string][]byte
	changed chan struct{}
}

func newFake() *fakeBackend {
	f := &fakeBackend{funcs: map[string]callFunc{}, args: map[string][]byte{}, changed: make(chan struct{})}
	f.plugins = []host.PluginInfo{
		{Name: "alpha", Version: "1.0.0", Digest: signing.Digest{0xab, 0xcd, 0xef, 1, 2, 3}, State: "verified", Tools: []string{"echo", "slow"}, Manifest: json.RawMessage(`{"name":"alpha"}`)},
		{Name: "beta", Version: "2.0.0", State: "quarantined", Reason: "bytes damaged"},
	}
	f.tools = []host.ToolInfo{
		{Name: "echo", Description: "Echo the arguments back", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`), Plugin: "alpha", Version: "1.0.0"},
		{Name: "other", Description: "A tool of another plugin", Parameters: json.RawMessage(`{"type":"object"}`), Plugin: "gamma", Version: "0.1.0"},
		{Name: "slow", Description: "Blocks until released", Parameters: json.RawMessage(`{"type":"object"}`), Plugin: "alpha", Version: "1.0.0"},
	}
	f.funcs["echo"] = func(_ context.Context, args []byte) (json.RawMessage, error) {
		return json.RawMessage(`{"echo":` + string(args) + `}`), nil
	}
	f.funcs["other"] = func(context.Context, []byte) (json.RawMessage, error) { return json.RawMessage(`"other"`), nil }
	return f
}

func (f *fakeBackend) Tools() []host.ToolInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]host.ToolInfo(nil), f.tools...)
}

func (f *fakeBackend) Plugins() []host.PluginInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]host.PluginInfo(nil), f.plugins...)
}

func (f *fakeBackend) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeBackend) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	f.mu.Lock()
	fn, ok := f.funcs[tool]
	f.args[tool] = append([]byte(nil), args...)
	f.mu.Unlock()
	if !ok {
		return nil, toolerr.Errorf(toolerr.CodeToolNotFound, "no tool named %q is installed; list the available tools first", tool)
	}
	return fn(ctx, args)
}

func (f *fakeBackend) handle(tool string, fn callFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.funcs[tool] = fn
}

func (f *fakeBackend) lastArgs(tool string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.args[tool]
}

func (f *fakeBackend) setTools(tools ...host.ToolInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools = tools
	close(f.changed)
	f.changed = make(chan struct{})
}

// failWith makes tool fail with code.
func (f *fakeBackend) failWith(tool string, code toolerr.Code) {
	f.handle(tool, func(context.Context, []byte) (json.RawMessage, error) {
		return nil, toolerr.Errorf(code, "the tool failed with %s", code)
	})
}
