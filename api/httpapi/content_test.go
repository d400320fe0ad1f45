package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testplugins"
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

// The conformance fixture's multi-block tools, run by the real runtime
// (extism/wazero) and answered over real HTTP.
func TestCallEnvelopeRealPlugin(t *testing.T) {
	h := newHostWith(t, host.Options{}, testplugins.Bundle(t, "conformance"))
	_, srv := serve(t, h, Options{})
	r := do(t, srv, "POST", "/v1/tools/test_multiple_content_types/call", `{}`, "")
	var got struct {
		Result struct {
			Content []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				Data     []byte `json:"data"`
				MIMEType string `json:"mimeType"`
				Resource *struct {
					URI, MIMEType, Text string
				} `json:"resource"`
			} `json:"content"`
		} `json:"result"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &got) != nil {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
	c := got.Result.Content
	if len(c) != 3 || c[0].Type != "text" || c[0].Text == "" ||
		c[1].Type != "image" || c[1].MIMEType != "image/png" || !strings.HasPrefix(string(c[1].Data), "\x89PNG") ||
		c[2].Type != "resource" || c[2].Resource == nil || c[2].Resource.URI != "test://embedded-resource" || c[2].Resource.Text == "" {
		t.Errorf("content = %s; want text, a PNG image and an embedded text resource", r.body)
	}
	r = do(t, srv, "POST", "/v1/tools/test_simple_text/call", `{}`, "")
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"result":"This is a simple text response for testing."}` {
		t.Errorf("an ordinary result changed: %d %s", r.status, r.body)
	}
}
