package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/strictjson"
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

// FuzzParseCallBodyMatchesReference holds parseCallBody (one strict pass,
// strictjson.Members) to the encoding/json Decoder version it replaced:
// the same bodies accepted with the same argument bytes; refused by both,
// except that a body which is not valid UTF-8 or has an unpaired surrogate
// escape is now refused here (the host refused its arguments before).
func FuzzParseCallBodyMatchesReference(f *testing.F) {
	for _, s := range []string{"", "{}", `{"arguments":{"a":1}}`, ` { "arguments" : { "a" : [1, {"b":"\u00e9"}] } } `, `{"arguments":null}`,
		`{"arguments":[]}`, `{"\u0061rguments":{}}`, `{"arguments":{},"arguments":{}}`, `{"arguments":{"a":1,"a":2}}`, `{"arguments":{}} x`,
		`{"arguments":{"s":"\ud800"}}`, `{"arguments":{"n":1e999999}}`, `[`, "\xff", `{"arguments":{"a":tru}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := parseCallBody(body)
		want, werr := referenceParseCallBody(body)
		switch {
		case err == nil && werr == nil:
			if !bytes.Equal(got, want) {
				t.Fatalf("%q: arguments %q, the reference %q", body, got, want)
			}
		case err == nil:
			t.Fatalf("%q: accepted (%q), the reference refused: %v", body, got, werr.Message)
		case werr == nil && strictjson.Check(bytes.Trim(body, jsonSpace), strictjson.Any{}) == nil:
			t.Fatalf("%q: refused (%v), the reference accepted %q", body, err.Message, want)
		}
	})
}

func referenceParseCallBody(body []byte) (json.RawMessage, *toolerr.Error) {
	shape := func(format string, args ...any) *toolerr.Error {
		return toolerr.Errorf(toolerr.CodeInvalidArguments, "the request body must be {\"arguments\":{...}}: "+format, args...)
	}
	body = bytes.Trim(body, jsonSpace)
	if len(body) == 0 {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, shape("the body is not a JSON object")
	}
	var args json.RawMessage
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, shape("invalid JSON: %v", err)
		}
		key, _ := tok.(string)
		if key != "arguments" {
			return nil, shape("unexpected key %q", key)
		}
		if seen {
			return nil, shape(`"arguments" appears twice`)
		}
		seen = true
		if err := dec.Decode(&args); err != nil {
			return nil, shape("invalid JSON: %v", err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, shape("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, shape("unexpected data after the JSON object")
	}
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage("{}"), nil
	}
	if args[0] != '{' {
		return nil, shape(`"arguments" must be a JSON object, not %s`, jsonKind(args[0]))
	}
	return args, nil
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
