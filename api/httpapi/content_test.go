package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A result in the toolhost_content envelope comes out of POST
// /v1/tools/{name}/call as {"result":{"content":[…]}} in the MCP block
// shape; a malformed one is a 422 plugin_error; other results are as before.
func TestCallEnvelopeResult(t *testing.T) {
	b := newFake()
	_, srv := serve(t, b, Options{})
	b.handle("echo", func(context.Context, []byte) (json.RawMessage, error) {
		return json.RawMessage(`{"toolhost_content":[{"type":"text","text":"hi"},{"type":"image","data":"AAEC","mimeType":"image/png"},` +
			`{"type":"resource","resource":{"uri":"test://x","mimeType":"application/octet-stream","blob":"AA=="}}]}`), nil
	})
	r := do(t, srv, "POST", "/v1/tools/echo/call", `{}`, "")
	const want = `{"result":{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AAEC","mimeType":"image/png"},` +
		`{"type":"resource","resource":{"uri":"test://x","mimeType":"application/octet-stream","blob":"AA=="}}]}}`
	if r.status != 200 || strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("status %d body %s\nwant 200 %s", r.status, r.body, want)
	}

	b.handle("echo", func(context.Context, []byte) (json.RawMessage, error) {
		return json.RawMessage(`{"toolhost_content":[{"type":"text","text":"hi","extra":1}]}`), nil
	})
	r = do(t, srv, "POST", "/v1/tools/echo/call", `{}`, "")
	if e := decode[errorBody](t, r.body); r.status != 422 || e.Error.Code != "plugin_error" || !strings.Contains(e.Error.Message, `unknown field "extra"`) {
		t.Errorf("malformed envelope: status %d body %s; want 422 plugin_error naming the field", r.status, r.body)
	}

	b.handle("echo", func(context.Context, []byte) (json.RawMessage, error) {
		return json.RawMessage(`{"toolhost_content_note":"an ordinary key"}`), nil
	})
	r = do(t, srv, "POST", "/v1/tools/echo/call", `{}`, "")
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"result":{"toolhost_content_note":"an ordinary key"}}` {
		t.Errorf("ordinary result: status %d body %s", r.status, r.body)
	}
}
