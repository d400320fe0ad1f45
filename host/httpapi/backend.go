package httpapi

import (
	"context"
	"encoding/json"

	"github.com/toolhost/toolhost/host"
)

// Backend is what the HTTP API needs from the runtime; *host.Host
// implements it.
//
// Contract:
//   - Tools lists the tools that can be called now, sorted by name, each
//     with a JSON Schema (root type "object") as Parameters. It is cheap
//     enough to call per request.
//   - Call runs one tool with args as raw JSON (nil or empty means {}).
//     The backend, not the caller, validates args against the schema.
//     Failures are *host.Error values whose Code is one of the host API
//     codes and whose Message a model can read; any other error is
//     answered as internal_error. Call honours ctx and returns within the
//     tool's deadline.
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
