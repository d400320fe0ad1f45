package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The TypeScript SDK v2 client, closing a subscriptions/listen stream on
// 2026-07-28, POSTs notifications/cancelled with MCP-Protocol-Version but no
// Mcp-Method. 2026-07-28 sets no header rules for notification POSTs, so it
// is accepted (202); a request without Mcp-Method, or a notification whose
// Mcp-Method disagrees with its body, is still refused.
func TestStatelessNotificationWithoutMethodHeader(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	cancelled := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"listen:0",` + meta + `}}`
	version := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}}
	withMethod := func(m string) http.Header {
		return http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {m}}
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
		status int
	}{
		{"notification without Mcp-Method", version, cancelled, http.StatusAccepted},
		{"notification with its Mcp-Method", withMethod("notifications/cancelled"), cancelled, http.StatusAccepted},
		{"notification with another Mcp-Method", withMethod("tools/list"), cancelled, http.StatusBadRequest},
		{"request without Mcp-Method", version, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := postMCP(t, srv.URL, tc.header, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, strings.TrimSpace(body), tc.status)
			}
		})
	}
}
