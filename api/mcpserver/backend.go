package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/toolhost/toolhost/host"
)

// Backend is what the MCP server needs from the runtime. *host.Host
// implements it; so does httpapi's call gate, which adds admission
// control, metrics and logging in front of a host.
//
// Contract:
//   - Tools lists the tools that can be called now, sorted by name, each
//     with a JSON Schema (root type "object") as Parameters. It is cheap
//     enough to call on every change.
//   - Call runs one tool with args as raw JSON (nil or empty means {}).
//     The backend, not the caller, validates args against the schema.
//     Failures are *toolerr.Error values whose Code is one of the host API
//     codes and whose Message a model can read; any other error is treated
//     as internal_error.
//   - Plugins lists installed plugins with their verification state.
//   - Changed returns a channel that is closed at the next change of the
//     tool set (install, remove, trust change). Callers take the channel
//     before reading Tools so that no change is missed.
//
// All methods are safe for concurrent use.
type Backend interface {
	Tools() []host.ToolInfo
	Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error)
	Plugins() []host.PluginInfo
	Changed() <-chan struct{}
}
