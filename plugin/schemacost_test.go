package plugin

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/strictjson"
)

// nestedA is {"a":{"a":…{}…}} n levels deep.
func nestedA(n int) string {
	return strings.Repeat(`{"a":`, n) + `{}` + strings.Repeat(`}`, n)
}

// Schemas whose validation cost grows exponentially (or never ends) are
// refused when compiled, at once.
func TestHostileSchemasRefused(t *testing.T) {
	dag := `{"type":"object","$defs":{"d0":{"type":"string"}`
	for i := 1; i <= 30; i++ {
		dag += `,"d` + strconv.Itoa(i) + `":{"allOf":[{"$ref":"#/$defs/d` + strconv.Itoa(i-1) + `"},{"$ref":"#/$defs/d` + strconv.Itoa(i-1) + `"}]}`
	}
	dag += `},"properties":{"x":{"$ref":"#/$defs/d30"}}}`
	for name, schema := range map[string]string{
		// Each level of the arguments applies the schema twice: 2^depth.
		"recursive allOf through properties": `{"type":"object","properties":{"a":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}}`,
		"recursive anyOf via $defs":          `{"type":"object","$ref":"#/$defs/n","$defs":{"n":{"properties":{"a":{"anyOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"},{"type":"null"}]}}}}}`,
		"shared subschema DAG":               dag,
		"in-place cycle":                     `{"type":"object","allOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"not":{"$ref":"#/$defs/b"}},"b":{"$ref":"#/$defs/a"}}}`,
		"self reference":                     `{"type":"object","$ref":"#"}`,
		"anchor cycle":                       `{"type":"object","$defs":{"x":{"$anchor":"x","oneOf":[{"$ref":"#x"}]}},"properties":{"p":{"$ref":"#x"}}}`,
		"dynamic reference":                  `{"type":"object","$dynamicAnchor":"n","properties":{"a":{"$dynamicRef":"#n"}}}`,
	} {
		start := time.Now()
		_, err := CompileSchema(json.RawMessage(schema))
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: refusing took %v", name, d)
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), "$ref") && !strings.Contains(err.Error(), "$dynamicRef") {
			t.Errorf("%s: the reason does not name the references: %v", name, err)
		}
	}
}

// Recursive schemas that apply each subschema once per level (trees,
// linked lists) are what real tools use: accepted, and deep arguments
// validate.
func TestRecursiveSchemasAccepted(t *testing.T) {
	for name, c := range map[string]struct{ schema, args string }{
		"tree": {`{"type":"object","$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
			`{"name":"r","children":[{"name":"c","children":[{"name":"g"}]},{"name":"d"}]}`},
		"linked list":     {`{"type":"object","properties":{"a":{"$ref":"#"},"v":{"type":"integer"}}}`, nestedA(60)},
		"anchors":         {`{"type":"object","properties":{"p":{"$ref":"#pt"}},"$defs":{"p":{"$anchor":"pt","type":"object","properties":{"x":{"type":"number"}}}}}`, `{"p":{"x":1.5}}`},
		"escaped pointer": {`{"type":"object","properties":{"p":{"$ref":"#/$defs/a~1b"}},"$defs":{"a/b":{"type":"string"}}}`, `{"p":"s"}`},
	} {
		s, err := CompileSchema(json.RawMessage(c.schema))
		if err != nil {
			t.Errorf("%s: refused: %v", name, err)
			continue
		}
		v, err := strictjson.Parse([]byte(c.args), strictjson.ValueLimits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CheckCost(v.Nodes); err != nil {
			t.Errorf("%s: cost check: %v", name, err)
		}
		if err := s.Validate(v.V); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The per-value bound times the number of values bounds a call: a costly
// (but accepted) schema refuses a call with very many values before
// validating.
func TestCheckCostBoundsACall(t *testing.T) {
	branches := make([]string, 500)
	for i := range branches {
		branches[i] = `{"type":"integer"}`
	}
	s, err := CompileSchema(json.RawMessage(`{"type":"object","properties":{"xs":{"type":"array","items":{"anyOf":[` + strings.Join(branches, ",") + `]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	small := `{"xs":[1,2,3]}`
	big := `{"xs":[` + strings.TrimSuffix(strings.Repeat("1,", 5000), ",") + `]}`
	for args, want := range map[string]bool{small: true, big: false} {
		v, err := strictjson.Parse([]byte(args), strictjson.ValueLimits{})
		if err != nil {
			t.Fatal(err)
		}
		err = s.CheckCost(v.Nodes)
		if (err == nil) != want || (err != nil && !errors.Is(err, ErrValidationCost)) {
			t.Errorf("%d bytes of arguments: %v, want ok=%v", len(args), err, want)
		}
	}
}

// FuzzSchemaCost: any schema CompileSchema accepts validates any
// arguments strictjson.Parse and CheckCost accept within a bounded time;
// nothing panics.
func FuzzSchemaCost(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"$ref":"#"}}}`, nestedA(20))
	f.Add(`{"type":"object","properties":{"a":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}}`, nestedA(25))
	f.Add(`{"type":"object","properties":{"xs":{"type":"array","items":{"multipleOf":0.001}}}}`, `{"xs":[1e400,1e-400,3]}`)
	f.Add(testSchema, `{"timezone":"x","count":2,"opts":{"deep":true},"list":["a"]}`)
	f.Add(testSchema, `{"timezone":3,"list":["a",{"b":1}]}`)
	f.Add(`{"type":"object","required":["a/b~c"],"properties":{"x":{"type":"array","items":{"type":"object","required":["y"]}}}}`, `{"x":[{},{"y":1}]}`)
	f.Add(`{"type":"object","additionalProperties":false,"properties":{"~1":{"enum":["a"]}}}`, `{"~1":"b","/":0}`)
	f.Add(`{"type":"object","$defs":{"x":{"$anchor":"x","items":{"$ref":"#x"}}},"properties":{"p":{"$ref":"#x"}}}`, `{"p":[[[[1]]]]}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		start := time.Now()
		s, err := CompileSchema(json.RawMessage(schema))
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("compiling a %d-byte schema took %v", len(schema), d)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("schema refused without a reason")
			}
			return
		}
		v, err := strictjson.Parse([]byte(args), strictjson.ValueLimits{})
		if err != nil || s.CheckCost(v.Nodes) != nil {
			return
		}
		start = time.Now()
		err = s.Validate(v.V)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("validating %d bytes of arguments took %v", len(args), d)
		}
		if err == nil {
			if _, ok := v.V.(map[string]any); !ok {
				t.Fatalf("arguments %s that are not an object passed an object schema", args)
			}
			return
		}
		// A refusal names the argument: a pointer into the arguments
		// (or, for a missing required one, into the object lacking it),
		// and why.
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Reason == "" {
			t.Fatalf("refusal without a reason: %#v", err)
		}
		if !pointsInto(v.V, ve.Field) {
			parent := ve.Field[:max(strings.LastIndex(ve.Field, "/"), 0)]
			if !pointsInto(v.V, parent) {
				t.Fatalf("refusal names %q, which is not in the arguments %s: %v", ve.Field, args, err)
			}
		}
	})
}

// pointsInto reports whether the JSON pointer ptr names a value in v.
func pointsInto(v any, ptr string) bool {
	if ptr == "" {
		return true
	}
	if !strings.HasPrefix(ptr, "/") {
		return false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != tok {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return true
}
