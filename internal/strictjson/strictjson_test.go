package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// testShape is a small manifest-like shape: exact keys at the top, an array
// of exact objects, and free-form values (Any) below some keys.
var testShape = Object{
	"name": Any{},
	"tags": ArrayOf{Elem: Any{}},
	"items": ArrayOf{Elem: Object{
		"id":    Any{},
		"extra": Any{},
	}},
	"limits": Object{"max": Any{}},
	"free":   Any{},
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		shape   Shape
		doc     string
		wantErr string // "" means the document is accepted
	}{
		// Accepted documents.
		{"empty object", testShape, `{}`, ""},
		{"all keys", testShape, `{"name":"x","tags":["a",1,null],"items":[{"id":1,"extra":{"k":[1,2]}}],"limits":{"max":3},"free":{"a":{"b":[{"c":1}]}}}`, ""},
		{"surrounding whitespace", testShape, " \n\t{ \"name\" : \"x\" }\r\n ", ""},
		{"null for object", testShape, `{"limits":null}`, ""},
		{"null for array", testShape, `{"items":null}`, ""},
		{"top-level null", testShape, `null`, ""},
		{"any scalar", Any{}, `"s"`, ""},
		{"any number", Any{}, `-1.5e300`, ""},
		{"any array", Any{}, `[1,[2,[3]],{"a":1}]`, ""},
		{"same key in sibling objects", testShape, `{"items":[{"id":1},{"id":2}]}`, ""},
		{"same key at different levels", Any{}, `{"a":{"a":{"a":1}}}`, ""},
		{"case-variant keys inside Any are different keys", Any{}, `{"a":1,"A":2}`, ""},
		{"valid multi-byte UTF-8", testShape, `{"name":"héllo ☃ 𝄞"}`, ""},

		// Duplicate keys, at every level.
		{"duplicate top-level key", testShape, `{"name":"a","name":"b"}`, `duplicate key "name" in $`},
		{"duplicate key in nested object", testShape, `{"limits":{"max":1,"max":2}}`, `duplicate key "max" in $.limits`},
		{"duplicate key in array element", testShape, `{"items":[{"id":1},{"id":1,"id":2}]}`, `duplicate key "id" in $.items[1]`},
		{"duplicate key inside Any", testShape, `{"free":{"a":1,"a":1}}`, `duplicate key "a" in $.free`},
		{"duplicate key deep inside Any", testShape, `{"free":{"x":[{"y":{"z":1,"z":2}}]}}`, `duplicate key "z" in $.free.x[0].y`},
		{"duplicate key inside Any array element", testShape, `{"tags":[{"k":1,"k":2}]}`, `duplicate key "k" in $.tags[0]`},
		{"duplicate key at the root of Any", Any{}, `{"a":1,"b":2,"a":3}`, `duplicate key "a" in $`},
		{"duplicate key spelled with an escape", testShape, `{"name":"a","n\u0061me":"b"}`, `duplicate key "name"`},
		{"duplicate empty key", Any{}, `{"":1,"":2}`, `duplicate key ""`},

		// Case-variant and unknown keys.
		{"case-variant top-level key", testShape, `{"Name":"x"}`, `keys are case-sensitive`},
		{"case-variant next to the real key", testShape, `{"name":"x","NAME":"y"}`, `differs from "name" only in case`},
		{"case-variant nested key", testShape, `{"limits":{"Max":1}}`, `key "Max" in $.limits differs from "max" only in case`},
		{"case-variant in array element", testShape, `{"items":[{"ID":1}]}`, `keys are case-sensitive`},
		{"unicode case fold (long s) is refused too", Object{"s": Any{}}, `{"ſ":1}`, `only in case`},
		{"unknown key", testShape, `{"nam":"x"}`, `unknown key "nam" in $`},
		{"unknown nested key", testShape, `{"limits":{"min":1}}`, `unknown key "min" in $.limits`},

		// Objects versus arrays.
		{"array where object expected", testShape, `{"limits":[]}`, `$.limits must not be an array`},
		{"array at root of object shape", testShape, `[]`, `$ must not be an array`},
		{"object where array expected", testShape, `{"tags":{}}`, `$.tags must be an array`},
		{"scalar where object expected", testShape, `{"limits":1}`, `$.limits must be an object`},
		{"string at root of object shape", testShape, `"x"`, `$ must be an object`},
		{"object in array of objects replaced by array", testShape, `{"items":[[]]}`, `$.items[0] must not be an array`},

		// Encoding and syntax.
		{"invalid UTF-8 in string", testShape, "{\"name\":\"\xff\"}", `not valid UTF-8`},
		{"invalid UTF-8 in key", Any{}, "{\"\xc3\x28\":1}", `not valid UTF-8`},
		{"overlong UTF-8", Any{}, "\"\xc0\xaf\"", `not valid UTF-8`},
		{"UTF-16 surrogate encoded as UTF-8", Any{}, "\"\xed\xa0\x80\"", `not valid UTF-8`},
		{"trailing garbage", testShape, `{} x`, `unexpected data after the JSON value`},
		{"second value", testShape, `{}{}`, `unexpected data after the JSON value`},
		{"trailing comma-separated value", Any{}, `1,2`, `unexpected data`},
		{"empty document", testShape, ``, `document ends early`},
		{"whitespace only", testShape, "  \n", `document ends early`},
		{"truncated object", testShape, `{"name":"x"`, syntaxError},
		{"trailing comma in object", Any{}, `{"a":1,}`, syntaxError},
		{"single quotes", Any{}, `{'a':1}`, syntaxError},
		{"bare word", Any{}, `nope`, syntaxError},
		{"NaN", Any{}, `NaN`, syntaxError},
		{"comment", Any{}, `{"a":1 /* c */}`, syntaxError},
		{"BOM", Any{}, "\ufeff{}", syntaxError},
		{"unescaped control character", Any{}, "\"a\x01b\"", syntaxError},
		{"NUL after value", Any{}, "{}\x00", `unexpected data`},
		{"paired surrogate escapes", Any{}, `"\ud834\udd1e"`, ""},
		{"escaped backslash before u", Any{}, `"\\ud800"`, ""},
		{"lone high surrogate escape", Any{}, `{"a":"x\ud800"}`, `unpaired UTF-16 surrogate`},
		{"high surrogate then letter", Any{}, `"\ud800x"`, `unpaired UTF-16 surrogate`},
		{"lone low surrogate escape", Any{}, `"\udc00"`, `unpaired UTF-16 surrogate`},
		{"reversed surrogate pair", Any{}, `"\udd1e\ud834"`, `unpaired UTF-16 surrogate`},
		{"two high surrogates", Any{}, `"\ud834\ud834\udd1e"`, `unpaired UTF-16 surrogate`},
		{"lone surrogate in key", Any{}, `{"\uDBFF":1}`, `unpaired UTF-16 surrogate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.doc), tt.shape)
			checkErr(t, err, tt.wantErr == "", tt.wantErr)
		})
	}
}

// syntaxError matches any refusal: the wording of syntax errors comes from
// encoding/json, but every error starts with ErrInvalid's text.
const syntaxError = "invalid JSON document: "

func checkErr(t *testing.T, err error, wantOK bool, wantText string) {
	t.Helper()
	if wantOK {
		if err != nil {
			t.Fatalf("refused a good document: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted a bad document; want an error containing %q", wantText)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %v does not wrap ErrInvalid", err)
	}
	if !strings.Contains(err.Error(), wantText) {
		t.Errorf("error %q does not contain %q", err, wantText)
	}
}

func TestCheckDepth(t *testing.T) {
	nest := func(open, close string, n int, inner string) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"MaxDepth arrays", nest("[", "]", MaxDepth, ""), true},
		{"MaxDepth arrays around a scalar", nest("[", "]", MaxDepth, "1"), true},
		{"MaxDepth objects", nest(`{"a":`, "}", MaxDepth-1, "{}"), true},
		{"MaxDepth+1 arrays", nest("[", "]", MaxDepth+1, ""), false},
		{"MaxDepth+1 objects", nest(`{"a":`, "}", MaxDepth, "{}"), false},
		{"mixed MaxDepth+1", nest(`[{"a":`, "}]", (MaxDepth+1)/2, "[]"), false},
		// A depth bomb: far deeper than encoding/json's own limit, and
		// unterminated, so refusing it must not depend on reading to the end.
		{"depth bomb", strings.Repeat("[", 1_000_000), false},
		{"object depth bomb", strings.Repeat(`{"a":`, 200_000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.doc), Any{})
			if tt.ok {
				checkErr(t, err, true, "")
				return
			}
			checkErr(t, err, false, "nested deeper than 64 levels")
		})
	}
}

func TestDecode(t *testing.T) {
	type item struct {
		ID    int             `json:"id"`
		Extra json.RawMessage `json:"extra"`
	}
	type doc struct {
		Name   string            `json:"name"`
		Tags   []any             `json:"tags"`
		Items  []item            `json:"items"`
		Limits struct{ Max int } `json:"limits"`
		Free   json.RawMessage   `json:"free"`
	}

	var d doc
	in := `{"name":"x","tags":["a"],"items":[{"id":7,"extra":{"k":1}}],"limits":{"max":3},"free":[1, 2]}`
	if err := Decode([]byte(in), testShape, &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "x" || len(d.Items) != 1 || d.Items[0].ID != 7 || string(d.Items[0].Extra) != `{"k":1}` || d.Limits.Max != 3 || string(d.Free) != `[1, 2]` {
		t.Errorf("decoded %+v", d)
	}

	// Every refusal of Check is a refusal of Decode, before anything is
	// stored in v.
	var d2 doc
	err := Decode([]byte(`{"name":"x","Name":"y"}`), testShape, &d2)
	checkErr(t, err, false, "case-sensitive")
	if d2.Name != "" {
		t.Errorf("Decode stored %q before refusing the document", d2.Name)
	}

	// A key the shape allows but the Go type lacks is refused too.
	type small struct {
		Name string `json:"name"`
	}
	var s small
	checkErr(t, Decode([]byte(`{"tags":[]}`), testShape, &s), false, "unknown field")

	// A value of the wrong type is refused with ErrInvalid.
	checkErr(t, Decode([]byte(`{"name":1}`), testShape, &d), false, "name: got number, want a string")
	checkErr(t, Decode([]byte(`{"tags":"x"}`), testShape, &d), false, "tags: got string, want an array")
}

// FuzzStrictJSON checks that Check never panics, never accepts what
// encoding/json considers invalid, and that what it accepts survives a
// re-encode: the decoded value, marshalled again, is accepted too.
func FuzzStrictJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `1`, `"s"`, `{"a":1,"a":2}`, `{"a":{"b":[1,{"c":2}]}}`,
		`{"name":"x","tags":["a"],"items":[{"id":1}],"limits":{"max":1},"free":{"z":[]}}`,
		`{"Name":1}`, `{"limits":[]}`, "{\"name\":\"\xff\"}", `{} {}`, `[[[[[[[[[[`,
		`{"n\u0061me":1,"name":2}`, `{"a":"\ud800"}`, `-0.0e-0`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, shape := range []Shape{Any{}, testShape} {
			err := Check(data, shape)
			if err == nil {
				if !json.Valid(data) {
					t.Fatalf("Check accepted invalid JSON %q", data)
				}
				if !utf8.Valid(data) {
					t.Fatalf("Check accepted invalid UTF-8 %q", data)
				}
			} else if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		}
		var v any
		if err := Decode(data, Any{}, &v); err != nil {
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q, but it does not marshal again: %v", data, err)
		}
		if err := Check(again, Any{}); err != nil {
			t.Fatalf("accepted %q, but not its re-encoding %q: %v", data, again, err)
		}
	})
}

// TestDetail: every refusal is an *Error whose kind errors.Is finds and
// whose Detail is its text without the kind's words.
func TestDetail(t *testing.T) {
	for _, c := range []struct {
		doc  string
		kind error
	}{
		{`{"a":1,"a":2}`, ErrInvalid},
		{`{"a":`, ErrInvalid},
		{`[1] x`, ErrInvalid},
		{"\"\xff\"", ErrInvalid},
		{strings.Repeat("[", 200) + strings.Repeat("]", 200), ErrBounds},
		{`1e999999`, ErrBounds},
	} {
		_, err := Parse([]byte(c.doc), ValueLimits{})
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, c.kind) {
			t.Errorf("%q: %v (%T), want an *Error of kind %v", c.doc, err, err, c.kind)
			continue
		}
		if want := strings.TrimPrefix(err.Error(), c.kind.Error()+": "); Detail(err) != want || want == err.Error() || want == "" {
			t.Errorf("%q: Detail %q, error %q", c.doc, Detail(err), err)
		}
	}
	if got := Detail(errors.New("other")); got != "other" {
		t.Errorf("Detail of another error: %q", got)
	}
}

// TestErrorsShowBoundedPaths: whatever a refused document holds — a key
// of 100 KB, a path thousands of levels deep — the error names where with
// a bounded start and end of it, never the whole.
func TestErrorsShowBoundedPaths(t *testing.T) {
	long := strings.Repeat("k", 100_000)
	deep := strings.Repeat(`{"b":`, 5_000) + "1" + strings.Repeat("}", 5_000)
	errs := map[string]error{}
	_, errs["Parse: duplicate long key"] = Parse([]byte(`{"`+long+`":1,"`+long+`":2}`), ValueLimits{})
	_, errs["Parse: bad number under a long key"] = Parse([]byte(`{"`+long+`":1e99999}`), ValueLimits{})
	_, errs["Parse: syntax under a long key"] = Parse([]byte(`{"`+long+`":[1,}`), ValueLimits{})
	_, errs["Parse: too deep"] = Parse([]byte(`{"a":`+deep+`}`), ValueLimits{MaxDepth: 20_000})
	_, errs["Parse: depth bound"] = Parse([]byte(`{"a":`+deep+`}`), ValueLimits{MaxDepth: 4_000})
	errs["Members: duplicate long key"] = Members([]byte(`{"`+long+`":1,"`+long+`":2}`), func(string, []byte) error { return nil })
	errs["Members: too deep"] = Members([]byte(`{"a":`+strings.Repeat("[", 20_000)+`}`), func(string, []byte) error { return nil })
	errs["Check: unknown long key"] = Check([]byte(`{"`+long+`":1}`), testShape)
	errs["Check: case-variant long key"] = Check([]byte(`{"free":{"`+long+`":[1,}}`), testShape)
	errs["Check: too deep"] = Check([]byte(`{"free":`+deep+`}`), testShape)
	for name, err := range errs {
		if name == "Parse: too deep" {
			if err == nil {
				continue // 5,000 levels are within the 20,000 asked for
			}
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		d := Detail(err)
		if len(d) > 4*maxShown || !utf8.ValidString(d) {
			t.Errorf("%s: %d bytes (valid UTF-8: %v): %.300s…", name, len(d), utf8.ValidString(d), d)
		}
	}
}

func TestShown(t *testing.T) {
	if got := Shown("$.a.b"); got != "$.a.b" {
		t.Errorf("a short path: %q", got)
	}
	for _, s := range []string{strings.Repeat("k", 1000), strings.Repeat("é", 500), strings.Repeat("日本", 300) + "x", "$" + strings.Repeat("[0]", 3000)} {
		got := Shown(s)
		if len(got) > maxShown+len("…") || !utf8.ValidString(got) || !strings.Contains(got, "…") {
			t.Errorf("Shown(%d bytes) = %d bytes %q", len(s), len(got), got)
		}
		head, tail, _ := strings.Cut(got, "…")
		if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) || head == "" || tail == "" {
			t.Errorf("Shown(%.20q…) = %q: not the start and the end", s, got)
		}
	}
}

func TestShownKeepsWhatFits(t *testing.T) {
	if s := strings.Repeat("k", maxShown); Shown(s) != s {
		t.Errorf("a key of exactly maxShown bytes was cut")
	}
}

// TestDecodeTypeErrorsNameTheKeyAndWhatItTakes: a value of the wrong type
// is explained in the document's terms (its key and the JSON it takes),
// never in Go's ("Go struct field Limits.limits.timeout_ms of type uint32").
func TestDecodeTypeErrorsNameTheKeyAndWhatItTakes(t *testing.T) {
	type limits struct {
		Timeout uint32   `json:"timeout_ms"`
		Pages   int      `json:"pages"`
		Ratio   float64  `json:"ratio"`
		On      bool     `json:"on"`
		Hosts   []string `json:"hosts"`
		Paths   map[string]string
	}
	type doc struct {
		Name   string `json:"name"`
		Limits limits `json:"limits"`
	}
	shape := Object{"name": Any{}, "limits": Any{}}
	for _, c := range []struct{ in, want string }{
		{`{"limits":{"timeout_ms":"2000"}}`, "limits.timeout_ms: got string, want a whole number from 0 to 4294967295"},
		{`{"limits":{"timeout_ms":-1}}`, "limits.timeout_ms: got number -1, want a whole number from 0 to 4294967295"},
		{`{"limits":{"timeout_ms":1.5}}`, "limits.timeout_ms: got number 1.5, want a whole number"},
		{`{"limits":{"timeout_ms":99999999999}}`, "limits.timeout_ms: got number 99999999999, want a whole number from 0 to 4294967295"},
		{`{"limits":{"pages":"1"}}`, "limits.pages: got string, want a whole number from -9223372036854775808"},
		{`{"limits":{"ratio":"1"}}`, "limits.ratio: got string, want a number"},
		{`{"limits":{"on":"yes"}}`, "limits.on: got string, want true or false"},
		{`{"limits":{"hosts":"a.example"}}`, "limits.hosts: got string, want an array of strings"},
		{`{"limits":[]}`, "limits: got array, want an object"},
		{`{"name":{}}`, "name: got object, want a string"},
	} {
		var d doc
		err := Decode([]byte(c.in), shape, &d)
		checkErr(t, err, false, c.want)
		if strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "uint32") {
			t.Errorf("%s: %v speaks Go, not JSON", c.in, err)
		}
	}
}
