package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkHTTPCallResumable is a plain 2025-11-25 tools/call over
// streamable HTTP with the resumption store on (the default) and off, to
// show what holding each call's events costs per call.
func BenchmarkHTTPCallResumable(b *testing.B) {
	for _, bench := range []struct {
		name  string
		bytes int64
	}{{"store", 0}, {"nostore", -1}} {
		b.Run(bench.name, func(b *testing.B) {
			fb := newFake(tool("echo", echoSchema))
			fb.answer("echo", func([]byte) (json.RawMessage, error) { return json.RawMessage(`{"ok":true}`), nil })
			s := New(fb, "dev")
			defer s.Close()
			srv := httptest.NewServer(s.Handler(HTTPOptions{ResumeBytes: bench.bytes}))
			defer srv.Close()
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a"}}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
					b.Fatal(res, err)
				}
			}
		})
	}
}
