package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testplugins"
)

// A plugin tool whose schema marks an argument with x-mcp-header (the
// conformance fixture's test_header_param): the go-sdk client speaking
// 2026-07-28 mirrors the argument into Mcp-Param-Region (Base64-encoded,
// since it is not plain ASCII) and the call runs; a request whose header
// disagrees with its body, or lacks it, is refused with 400 / -32020 (the
// SDK checks before it dispatches the call).
func TestMCPParamHeaders(t *testing.T) {
	h := newHostWith(t, host.Options{}, testplugins.Bundle(t, "conformance"))
	_, srv := serve(t, h, Options{})

	cs := connectMCPAt(t, srv, bearer{testToken, srv.Client().Transport}, "2026-07-28", nil)
	if _, err := cs.ListTools(context.Background(), nil); err != nil { // the client learns the annotation here
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), mcpCall("test_header_param", map[string]any{"region": "Zürich ☃"}))
	if err != nil || res.IsError || textOf(res) != "region: Zürich ☃" {
		t.Fatalf("call with the client's own Mcp-Param header: %+v, %v", res, err)
	}

	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_header_param","arguments":{"region":"eu"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	for name, region := range map[string]string{"mismatch": "us", "missing": "", "bad base64": "=?base64?ZX!!?="} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(call))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "test_header_param")
		if region != "" {
			req.Header.Set("Mcp-Param-Region", region)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || body.Error.Code != -32020 || !strings.Contains(body.Error.Message, "Mcp-Param-Region") {
			t.Errorf("%s: status %d, error %+v; want 400 with -32020 naming Mcp-Param-Region", name, resp.StatusCode, body.Error)
		}
	}
}
