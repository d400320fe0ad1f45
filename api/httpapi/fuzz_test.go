package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseCallBody: any body either yields one JSON object to hand to the
// host, from a body that was valid JSON, or an invalid_arguments error.
func FuzzParseCallBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"arguments":{"a":1}}`, `{"arguments":null}`, `{"arguments":[]}`, `{"Arguments":{}}`, `{"arguments":{},"arguments":{}}`, `{"arguments":{}} x`, `[`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		args, err := parseCallBody(body)
		if err != nil {
			if err.Code != "invalid_arguments" || err.Message == "" {
				t.Fatalf("error %+v", err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) != nil || obj == nil {
			t.Fatalf("arguments %q from %q are not a JSON object", args, body)
		}
		if b := bytes.Trim(body, jsonSpace); len(b) > 0 && !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
	})
}

// FuzzSplitHost: Host headers are attacker-chosen; splitting never panics
// and a result never carries brackets or an invalid port.
func FuzzSplitHost(f *testing.F) {
	for _, s := range []string{"localhost:7411", "[::1]:80", "::1", "LOCALHOST.", "[::1", "a:b", "x:99999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		name, port, ok := splitHost(h)
		if !ok {
			return
		}
		if port != "" && !isPort(port) {
			t.Fatalf("port %q from %q", port, h)
		}
		for _, c := range name {
			if c == '[' || c == ']' {
				t.Fatalf("name %q from %q keeps brackets", name, h)
			}
		}
	})
}
