package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseValue(t *testing.T) {
	v, err := Parse([]byte(`{"a": [1, 2.50, {"b": null}], "c": "x"}`), ValueLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{json.Number("1"), json.Number("2.50"), map[string]any{"b": nil}}, "c": "x"}
	if !reflect.DeepEqual(v.V, want) {
		t.Fatalf("value %#v, want %#v", v.V, want)
	}
	// depth 0: the object; 1: keys a, c and their values; 2: three
	// elements; 3: key b and its value.
	if want := []int{1, 4, 3, 2}; !reflect.DeepEqual(v.Nodes, want) {
		t.Fatalf("nodes %v, want %v", v.Nodes, want)
	}
}

func TestParseNumberBounds(t *testing.T) {
	for _, c := range []struct {
		lit string
		ok  bool
	}{
		{"0", true}, {"-0.0", true}, {"1e400", true}, {"1e401", false}, {"-1E+400", true},
		{"1e-400", true}, {"1e-401", false}, {"0.001e-397", true}, {"0.001e-398", false},
		{"12345e396", true}, {"12345e397", false}, {"0e999", false}, {"0.0e5", true},
		{"1e999999", false}, {"1e99999999999999999999999", false},
		{strings.Repeat("9", 100), true}, {strings.Repeat("9", 101), false},
		{"0." + strings.Repeat("0", 98), true},
	} {
		_, err := Parse([]byte(`{"n": `+c.lit+`}`), ValueLimits{})
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.lit, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrBounds) {
			t.Errorf("%s: %v does not wrap ErrBounds", c.lit, err)
		}
		if err != nil && !strings.Contains(err.Error(), "$.n") {
			t.Errorf("%s: %v does not say where", c.lit, err)
		}
	}
}

func TestParseRefusesWhatCheckRefuses(t *testing.T) {
	for _, doc := range []string{
		`{"a":1,"a":2}`, `{"a":1} x`, "\"\xff\"", `"\ud800"`, `[1,]`, ``,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	} {
		if _, err := Parse([]byte(doc), ValueLimits{}); err == nil {
			t.Errorf("%q accepted", doc)
		}
	}
	if _, err := Parse([]byte(`[[1]]`), ValueLimits{MaxDepth: 1}); err == nil || !strings.Contains(err.Error(), "$[0]") {
		t.Errorf("depth bound: %v", err)
	}
}

// FuzzParse: Parse never panics, agrees with Check on well-formedness,
// never returns a number beyond the bounds, and finishes in time linear
// in the input (a generous bound, far below what an exact-rational
// validator spends on one huge exponent).
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2,{"b":null}]}`, `{"n":1e400}`, `{"n":1e999999}`, `[0.000001e-300]`, `{"a":"\ud83d\ude00"}`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		v, err := Parse(data, ValueLimits{})
		if d := time.Since(start); d > time.Second+time.Duration(len(data))*time.Microsecond {
			t.Fatalf("Parse of %d bytes took %v", len(data), d)
		}
		if err != nil {
			if errors.Is(err, ErrInvalid) && Check(data, Any{}) == nil {
				t.Fatalf("Parse says invalid (%v), Check accepts", err)
			}
			return
		}
		if cerr := Check(data, Any{}); cerr != nil {
			t.Fatalf("Parse accepted what Check refuses: %v", cerr)
		}
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case json.Number:
				if checkNumber(string(x), ValueLimits{MaxNumberLen: DefaultMaxNumberLen, MaxExponent: DefaultMaxExponent}) != nil {
					t.Fatalf("out-of-bounds number %s returned", x)
				}
			case map[string]any:
				for _, c := range x {
					walk(c)
				}
			case []any:
				for _, c := range x {
					walk(c)
				}
			}
		}
		walk(v.V)
		if len(v.Nodes) == 0 || v.Nodes[0] != 1 {
			t.Fatalf("node counts %v", v.Nodes)
		}
	})
}

// FuzzParseMatchesReference holds the hand-written Parse to the
// Token-based parser it replaced: every document is accepted by both or
// refused by both, for the same kind of reason (malformed or out of
// bounds), and an accepted one gives the same value and node counts.
// Small limits put the depth and number bounds within the fuzzer's reach.
func FuzzParseMatchesReference(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[1,2,{"b":null}]}`, `{"n":1e400}`, `{"n":1e999999}`, `[0.000001e-300]`,
		`{"a":"\ud83d\ude00"}`, `{"a":"\ud83d"}`, `{"a":"\ude00\ud83d"}`, `"\ud800\ud800\udc00"`, `{"a":1,"a":2}`,
		`{"a":1,"\u0061":2}`, `[1,]`, `{"a" 1}`, `[01]`, `[-]`, `[1.]`, `[1e+]`, `[1e999x]`, `tru`, `nulll`,
		`"\x"`, "\"\t\"", `"\u12"`, `"a\/b\\c\"d\b\f\n\r\t"`, `[[[[1]]]]`, ` {"é":"☃ 𝄞"} `, `{"a":[{"b":[]},{}]} x`,
		`{"k":"\uD834\uDD1E"}`, `"\ud834\u0041"`, `[1e2,-0.0,0e0,123456789012345678901234567890]`,
	} {
		f.Add([]byte(s))
	}
	lim := ValueLimits{MaxDepth: 4, MaxNumberLen: 12, MaxExponent: 20}
	kind := func(err error) string {
		switch {
		case err == nil:
			return "accepted"
		case errors.Is(err, ErrBounds):
			return "out of bounds"
		case errors.Is(err, ErrInvalid):
			return "invalid"
		}
		return "other: " + err.Error()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, l := range []ValueLimits{{}, lim} {
			got, err := Parse(data, l)
			want, werr := referenceParse(data, l)
			if kind(err) != kind(werr) {
				t.Fatalf("%q (limits %+v): Parse %s (%v), the reference %s (%v)", data, l, kind(err), err, kind(werr), werr)
			}
			if err != nil {
				continue
			}
			if !reflect.DeepEqual(got.V, want.V) {
				t.Fatalf("%q: Parse gave %#v, the reference %#v", data, got.V, want.V)
			}
			if !reflect.DeepEqual(got.Nodes, want.Nodes) {
				t.Fatalf("%q: Parse counted %v, the reference %v", data, got.Nodes, want.Nodes)
			}
		}
	})
}

func TestParseErrorsSayWhereAndWhat(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"a":[1,tru]}`, `invalid character ']' at byte 11, expecting "true"`},
		{`{"a":[1,tru]}`, `(at $.a[1])`},
		{`{"a" 1}`, `expecting ':' after an object key`},
		{`[1 2]`, `expecting ',' or ']'`},
		{`{"a":"x\qy"}`, `expecting an escape`},
		{"{\"a\":\"\x01\"}", `control characters must be escaped`},
		{`{"a":[`, `document ends early at $.a[0]`},
		{`{"a":"\ud800"}`, `unpaired UTF-16 surrogate escape before byte 13`},
		{`{"a":1} x`, `unexpected data after the JSON value at byte 8`},
	} {
		_, err := Parse([]byte(c.doc), ValueLimits{})
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrInvalid saying %q", c.doc, err, c.want)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	in := []byte(`{"query":"weather in Paris","units":"metric","days":3,"lang":"en"}`)
	for name, parse := range map[string]func([]byte, ValueLimits) (Value, error){"scanner": Parse, "reference": referenceParse} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parse(in, ValueLimits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
