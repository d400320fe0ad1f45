package plugin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/strictjson"
)

// refs is {"allOf":[{"$ref":"#/$defs/p"} ×n]}: one $defs entry applied n times.
func refs(n int) string {
	return `{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"$ref":"#/$defs/p"},`, n), ",") + `]}`
}

// manyPatterns is an allOf of n distinct cheap patterns.
func manyPatterns(n int) string {
	var b strings.Builder
	b.WriteString(`{"allOf":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"pattern":"(a|aa|b{` + strings.Repeat("1", 1+i%2) + `})*$"}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

func textArgs(t *testing.T, s *Schema, args string) error {
	t.Helper()
	v, err := strictjson.Parse([]byte(args), strictjson.ValueLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckCost(v.Nodes); err != nil {
		t.Fatalf("CheckCost refused: %v", err)
	}
	return s.CheckTextCost(v.V)
}

// A string is read by every pattern and length keyword that applies to it,
// in time proportional to its length (times the pattern's program size for
// a pattern): a signed schema with one heavy pattern, or many light ones,
// and a long argument kept the validator busy for seconds to minutes (1 000
// patterns × 1 MB: 84 s), past any deadline. Such calls are refused before
// validation, wherever the strings sit: values, member names (patternProperties,
// propertyNames), items, through references.
func TestLongStringsForHeavyPatternsRefused(t *testing.T) {
	long := strings.Repeat("a", 600_000)
	mid := strings.Repeat("a", 60_000)
	for name, c := range map[string]struct{ schema, args string }{
		"one heavy pattern":                {`{"type":"object","properties":{"s":{"type":"string","pattern":"[ab]{500}c"}}}`, `{"s":"` + mid + `"}`},
		"1000 patterns by reference":       {`{"type":"object","$defs":{"p":` + manyPatterns(100) + `},"properties":{"s":` + refs(10) + `}}`, `{"s":"` + mid + `"}`},
		"light pattern, long string":       {`{"type":"object","properties":{"s":{"pattern":"^(a|b|ab|ba)*c{3}(x|y)+[0-9]{20}z$"}}}`, `{"s":"` + long + `"}`},
		"length keywords ×1000":            {`{"type":"object","$defs":{"p":{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"maxLength":1000000},`, 100), ",") + `]}},"properties":{"s":` + refs(10) + `}}`, `{"s":"` + long + `"}`},
		"patternProperties on a long name": {`{"type":"object","patternProperties":{"[ab]{300}c":{}}}`, `{"` + mid + `":1}`},
		"propertyNames pattern":            {`{"type":"object","propertyNames":{"pattern":"[ab]{300}c"}}`, `{"` + mid + `":1}`},
		"array items":                      {`{"type":"object","properties":{"l":{"type":"array","items":{"pattern":"[ab]{300}c"}}}}`, `{"l":["` + mid + `","` + mid + `"]}`},
		"prefixItems":                      {`{"type":"object","properties":{"l":{"prefixItems":[{},{"pattern":"[ab]{300}c"}]}}}`, `{"l":[1,"` + mid + `"]}`},
		"additionalProperties":             {`{"type":"object","additionalProperties":{"pattern":"[ab]{300}c"}}`, `{"x":"` + mid + `"}`},
		"recursive":                        {`{"type":"object","properties":{"a":{"$ref":"#"},"s":{"pattern":"[ab]{300}c"}}}`, `{"a":{"a":{"s":"` + mid + `"}}}`},
	} {
		s, err := CompileSchema(json.RawMessage(c.schema))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err = textArgs(t, s, c.args)
		if !errors.Is(err, ErrTextCost) {
			t.Errorf("%s: got %v, want ErrTextCost", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "send shorter strings") {
			t.Errorf("%s: the refusal does not say what to do: %v", name, err)
		}
	}
}

// What tools really send stays accepted: a large string beside a property
// with a pattern is charged only its own keywords, short strings pass many
// patterns, and a schema without text keywords costs no walk at all.
func TestOrdinaryStringsAccepted(t *testing.T) {
	mib := strings.Repeat("x", 1<<20-100)
	for name, c := range map[string]struct{ schema, args string }{
		"big content beside a patterned path": {`{"type":"object","properties":{"path":{"type":"string","pattern":"^(/[a-zA-Z0-9._-]{1,255})+$"},"content":{"type":"string","maxLength":2000000}}}`, `{"path":"/a/b.txt","content":"` + mib + `"}`},
		"1 MiB against a simple pattern":      {`{"type":"object","properties":{"s":{"type":"string","pattern":"^[^<>]*$"}}}`, `{"s":"` + mib + `"}`},
		"short strings, 1000 patterns":        {`{"type":"object","$defs":{"p":` + manyPatterns(100) + `},"properties":{"s":` + refs(10) + `}}`, `{"s":"aab"}`},
		"long names without key patterns":     {`{"type":"object","properties":{"x":{"pattern":"[ab]{300}c"}}}`, `{"` + strings.Repeat("k", 100_000) + `":1,"x":"ac"}`},
		"no text keywords":                    {`{"type":"object","properties":{"s":{"type":"string"}}}`, `{"s":"` + mib + `"}`},
	} {
		s, err := CompileSchema(json.RawMessage(c.schema))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := textArgs(t, s, c.args); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
	s, err := CompileSchema(json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","enum":["a"]}}}`))
	if err != nil || s.text != nil {
		t.Fatalf("a schema without text keywords keeps its analysis for a walk (err %v)", err)
	}
}

// The walk is skipped when the arguments' bytes, each charged the most a
// byte can be charged (perByteBound), stay within MaxTextCost; so that
// bound must hold for every value the walk charges: its work on any
// arguments is at most their bytes times the bound. Checked on schemas
// that reach strings every way the walk follows (properties, items,
// prefixItems, patternProperties, propertyNames, additionalProperties,
// in-place applicators, repeated and recursive references).
func TestPerByteBoundHoldsForTheWalk(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"s":{"type":"string","pattern":"[ab]{50}c","maxLength":9}}}`,
		`{"type":"object","$defs":{"p":` + manyPatterns(7) + `},"properties":{"s":` + refs(5) + `,"t":{"$ref":"#/$defs/p"}}}`,
		`{"type":"object","patternProperties":{"^[a-z]{2,9}$":{"pattern":"x+y"}},"propertyNames":{"pattern":"^(a|b)+$","minLength":1},"additionalProperties":{"maxLength":3}}`,
		`{"type":"object","properties":{"l":{"type":"array","prefixItems":[{"pattern":"a{9}"},{"allOf":[{"pattern":"b"},{"pattern":"c{20}"}]}],"items":{"pattern":"(ab)*"}}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#"},"s":{"pattern":"[ab]{30}c"}},"anyOf":[{"properties":{"s":{"minLength":2}}},{"properties":{"a":{"pattern":"z"}}}]}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"k":{"pattern":"q"}},"additionalProperties":{"$ref":"#/properties/o"}}}}`,
	}
	args := []string{
		`{}`,
		`{"s":"aaab","t":"abab","x":"y"}`,
		`{"ab":"xxy","zz":"q","abc":"long value here","a":{"a":{"s":"` + strings.Repeat("a", 500) + `"}}}`,
		`{"l":["aaaaaaaaa","bcc",["nested"],"ab","abab"],"s":"` + strings.Repeat("b", 300) + `"}`,
		`{"o":{"k":"qq","p":{"k":"q","r":{"k":"` + strings.Repeat("q", 200) + `"}}},"a":{"s":"ac","a":{}}}`,
		`{"` + strings.Repeat("ab", 40) + `":"` + strings.Repeat("x", 90) + `y"}`,
	}
	for i, src := range schemas {
		s, err := CompileSchema(json.RawMessage(src))
		if err != nil || s.text == nil {
			t.Fatalf("schema %d: %v (text analysis %v)", i, err, s != nil && s.text != nil)
		}
		for j, a := range args {
			v, err := strictjson.Parse([]byte(a), strictjson.ValueLimits{})
			if err != nil {
				t.Fatal(err)
			}
			w := &textWalk{a: s.text, closures: map[string]map[string]int64{}}
			w.value(v.V, map[string]int64{"": 1})
			if bound := satMul(textBytes(v.V), s.textPerByte); w.work > bound {
				t.Errorf("schema %d, arguments %d: the walk charged %d, over the bound %d that lets calls skip it", i, j, w.work, bound)
			}
		}
	}
}

// What most calls send passes without the walk: no allocation.
func TestSmallArgumentsSkipTheWalk(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","maxLength":200},"units":{"type":"string","pattern":"^[a-z]+$"},"days":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strictjson.Parse([]byte(`{"query":"weather in Paris","units":"metric","days":3}`), strictjson.ValueLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := s.CheckTextCost(v.V); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CheckTextCost allocated %.0f times per call for small arguments; want the walk skipped", n)
	}
}
