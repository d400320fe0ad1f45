package httpapi

import "github.com/toolhost/toolhost/api/mcpserver"

// Backend is what the HTTP API needs from the runtime: exactly what the MCP
// server needs (the API serves /mcp from the same backend), so it is the
// same interface, with the contract written there. *host.Host implements
// it; Tools is called per request, so it must be cheap.
type Backend = mcpserver.Backend
