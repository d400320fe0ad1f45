package content

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/toolerr"
)

const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

func TestParseOrdinaryResultsAreNotEnvelopes(t *testing.T) {
	for _, out := range []string{
		``, `"text"`, `42`, `null`, `[{"toolhost_content":[]}]`, `{"a":1}`,
		`{"Toolhost_Content":[{"type":"text","text":"x"}]}`, // keys match exactly
		`{"note":"mentions \"toolhost_content\" in a string"}`,
		`{"toolhost_content": [`, // not JSON at all: left to the host's own handling
	} {
		blocks, ok, err := Parse([]byte(out))
		if ok || err != nil || blocks != nil {
			t.Errorf("Parse(%s) = %v, %v, %v; want an ordinary result", out, blocks, ok, err)
		}
	}
}

func TestParseAllBlockTypes(t *testing.T) {
	out := `{"toolhost_content":[
	  {"type":"text","text":"hello"},
	  {"type":"image","data":"` + png1x1 + `","mimeType":"image/png"},
	  {"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},
	  {"type":"resource_link","uri":"file:///r.txt","name":"r.txt","title":"R","mimeType":"text/plain"},
	  {"type":"resource","resource":{"uri":"test://doc","mimeType":"text/plain","text":"body"}},
	  {"type":"resource","resource":{"uri":"test://bin","mimeType":"application/octet-stream","blob":"AAE="}}
	]}`
	blocks, ok, err := Parse([]byte(out))
	if !ok || err != nil {
		t.Fatalf("Parse = ok %v, err %v; want a valid envelope", ok, err)
	}
	want := []Block{
		{Type: "text", Text: "hello"},
		{Type: "image", Data: blocks[1].Data, MIMEType: "image/png"},
		{Type: "audio", Data: []byte("RIFF"), MIMEType: "audio/wav"},
		{Type: "resource_link", URI: "file:///r.txt", Name: "r.txt", Title: "R", MIMEType: "text/plain"},
		{Type: "resource", Resource: &Resource{URI: "test://doc", MIMEType: "text/plain", Text: "body"}},
		{Type: "resource", Resource: &Resource{URI: "test://bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1}}},
	}
	if !reflect.DeepEqual(blocks, want) {
		t.Fatalf("blocks = %+v\nwant %+v", blocks, want)
	}
	if !strings.HasPrefix(string(blocks[1].Data), "\x89PNG") {
		t.Errorf("image data was not decoded: % x", blocks[1].Data[:4])
	}
	wire, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	const wantWire = `[{"type":"text","text":"hello"},{"type":"image","data":"` + png1x1 + `","mimeType":"image/png"},` +
		`{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},` +
		`{"type":"resource_link","uri":"file:///r.txt","name":"r.txt","title":"R","mimeType":"text/plain"},` +
		`{"type":"resource","resource":{"uri":"test://doc","mimeType":"text/plain","text":"body"}},` +
		`{"type":"resource","resource":{"uri":"test://bin","mimeType":"application/octet-stream","blob":"AAE="}}]`
	if string(wire) != wantWire {
		t.Errorf("wire = %s\nwant %s", wire, wantWire)
	}
}

func TestParseMalformedEnvelopes(t *testing.T) {
	many := strings.Repeat(`{"type":"text","text":"x"},`, MaxBlocks) + `{"type":"text","text":"x"}`
	for _, tc := range []struct{ out, want string }{
		{`{"toolhost_content":[],"other":1}`, "no other keys"},
		{`{"toolhost_content":{}}`, "must be an array"},
		{`{"toolhost_content":null}`, "must be an array"},
		{`{"toolhost_content":[]}`, "0 blocks"},
		{`{"toolhost_content":[` + many + `]}`, fmt.Sprintf("%d blocks", MaxBlocks+1)},
		{`{"toolhost_content":[{"type":"video","data":"AA=="}]}`, `unknown type "video"`},
		{`{"toolhost_content":[{"text":"x"}]}`, `unknown type ""`},
		{`{"toolhost_content":[{"type":"text"}]}`, `missing "text"`},
		{`{"toolhost_content":[{"type":"text","text":"x","Text":"y"}]}`, `unknown field "Text"`},
		{`{"toolhost_content":[{"type":"text","text":"x","text":"y"}]}`, `appears twice`},
		{`{"toolhost_content":[{"type":"text","text":7}]}`, `"text" must be a string`},
		{`{"toolhost_content":[{"type":"image","data":"%%%","mimeType":"image/png"}]}`, "not valid base64"},
		{`{"toolhost_content":[{"type":"image","data":"AB","mimeType":"image/png"}]}`, "not valid base64"},
		{`{"toolhost_content":[{"type":"image","data":"","mimeType":"image/png"}]}`, `"data" is empty`},
		{`{"toolhost_content":[{"type":"image","data":"AA==","mimeType":"png"}]}`, "not a media type"},
		{`{"toolhost_content":[{"type":"image","data":"AA==","mimeType":"audio/wav"}]}`, `must start with "image/"`},
		{`{"toolhost_content":[{"type":"audio","data":"AA==","mimeType":"image/png"}]}`, `must start with "audio/"`},
		{`{"toolhost_content":[{"type":"resource_link","uri":"r.txt","name":"r"}]}`, "not an absolute URI"},
		{`{"toolhost_content":[{"type":"resource_link","uri":"file:///r","name":""}]}`, `"name" must not be empty`},
		{`{"toolhost_content":[{"type":"resource","resource":{"uri":"test://x","mimeType":"text/plain"}}]}`, "exactly one of"},
		{`{"toolhost_content":[{"type":"resource","resource":{"uri":"test://x","mimeType":"text/plain","text":"a","blob":"AA=="}}]}`, "exactly one of"},
		{`{"toolhost_content":[{"type":"resource","resource":{"uri":"test://x","text":"a"}}]}`, `missing "mimeType"`},
		{`{"toolhost_content":[{"type":"resource","resource":"x"}]}`, "expected a JSON object"},
		{`{"toolhost_content":[{"type":"text","text":"ok"},{"type":"text"}]}`, "block 1:"},
	} {
		_, ok, err := Parse([]byte(tc.out))
		var te *toolerr.Error
		if !ok || !errors.As(err, &te) || te.Code != toolerr.CodePluginError {
			t.Errorf("Parse(%.80s) = ok %v, err %v; want a plugin_error", tc.out, ok, err)
			continue
		}
		if !strings.Contains(te.Message, tc.want) || !strings.Contains(te.Message, "docs/plugin-authoring.md") {
			t.Errorf("Parse(%.80s) error %q; want it to say %q and where the format is documented", tc.out, te.Message, tc.want)
		}
	}
}

// FuzzParse: Parse never panics; whatever it accepts is bounded and comes
// out of MarshalJSON in a form Parse accepts again as the same blocks.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"toolhost_content":[{"type":"text","text":"hi"}]}`))
	f.Add([]byte(`{"toolhost_content":[{"type":"image","data":"` + png1x1 + `","mimeType":"image/png"}]}`))
	f.Add([]byte(`{"toolhost_content":[{"type":"resource","resource":{"uri":"a:b","mimeType":"x/y","blob":""}}]}`))
	f.Add([]byte(`{"toolhost_content":[{"type":"resource_link","uri":"a:b","name":"n","description":"d"}]}`))
	f.Add([]byte(`{"toolhost_content":[],"toolhost_content":[]}`))
	f.Add([]byte(`{"x":1}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		blocks, ok, err := Parse(out)
		if !ok {
			if err != nil || blocks != nil {
				t.Fatalf("not an envelope but err %v, blocks %v", err, blocks)
			}
			return
		}
		if err != nil {
			var te *toolerr.Error
			if !errors.As(err, &te) || te.Code != toolerr.CodePluginError {
				t.Fatalf("error %v is not a plugin_error", err)
			}
			return
		}
		if len(blocks) == 0 || len(blocks) > MaxBlocks {
			t.Fatalf("%d blocks accepted", len(blocks))
		}
		wire, err := json.Marshal(map[string]any{Key: blocks})
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, ok, err := Parse(wire)
		if !ok || err != nil || !reflect.DeepEqual(again, blocks) {
			t.Fatalf("round trip of %s: ok %v err %v\n%+v\nwant %+v", wire, ok, err, again, blocks)
		}
	})
}
