package plugin

import (
	"errors"
	"fmt"
	"regexp/syntax"
)

// Text cost of validation.
//
// The subschema count (analyseCost, CheckCost) treats every evaluation as
// equally cheap, but two keywords cost in proportion to the string they
// read: "pattern" (and patternProperties' patterns, on every member name)
// runs Go's regexp, whose time is the string's length times the pattern's
// program size in the worst case (~25 ns per byte and instruction measured:
// `[ab]{500}c` takes 11 s on a 1 MiB string of "a"), and minLength/maxLength
// count runes. A signed schema with one such pattern, or a thousand cheap
// ones, let a 1 MiB argument keep the host validating for seconds to minutes
// before the call's deadline could end anything (the validator cannot stop
// mid-way). So a call's text work — for every string value and member name,
// its bytes times the weight of the subschemas that may apply to it — is
// bounded before Validate runs. The walk follows the arguments through the
// schema by property name and item index, so a large string is charged only
// the patterns of its own property, not those of its neighbours.

// MaxTextCost bounds the text work of one call's validation, in bytes ×
// regexp instructions: about 0.2 s at the worst rate measured, ~20 ms for
// ordinary patterns.
const MaxTextCost = 1 << 23

// ErrTextCost is returned by Schema.CheckTextCost for arguments whose strings
// are too long for the patterns that check them.
var ErrTextCost = errors.New("arguments too long for the tool's schema")

// textKeys are a costNode's keywords that read strings, and where its
// descending applicators lead, by kind.
type textKeys struct {
	own     int64 // per byte of the value: pattern instructions, 1 per length keyword
	key     int64 // per byte of each member name: patternProperties' instructions
	props   map[string][]string
	members []string // patternProperties, additionalProperties, unevaluatedProperties
	names   []string // propertyNames
	items   []string // items (one schema), additionalItems, contains, unevaluatedItems
	prefix  [][]string
}

// patternWeight is the size of the program Go's regexp runs for p.
func patternWeight(p string) int64 {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return 1 // the compiler refused it already
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 1
	}
	return int64(len(prog.Inst))
}

// readText fills n.text from the schema object obj at ptr.
func (n *costNode) readText(obj map[string]any, at func(string, ...string) string) {
	t := &n.text
	if p, ok := obj["pattern"].(string); ok {
		t.own += patternWeight(p)
	}
	for _, k := range []string{"minLength", "maxLength"} {
		if _, ok := obj[k]; ok {
			t.own++
		}
	}
	if m, ok := obj["properties"].(map[string]any); ok {
		t.props = map[string][]string{}
		for name := range m {
			t.props[name] = append(t.props[name], at("properties", name))
		}
	}
	if m, ok := obj["patternProperties"].(map[string]any); ok {
		for p := range m {
			t.key += patternWeight(p)
			t.members = append(t.members, at("patternProperties", p))
		}
	}
	one := func(k string, dst *[]string) {
		if _, ok := obj[k].(map[string]any); ok {
			*dst = append(*dst, at(k))
		}
	}
	one("additionalProperties", &t.members)
	one("unevaluatedProperties", &t.members)
	one("propertyNames", &t.names)
	for _, k := range []string{"items", "additionalItems", "contains", "unevaluatedItems"} {
		one(k, &t.items)
	}
	for _, k := range []string{"prefixItems", "items"} {
		if list, ok := obj[k].([]any); ok {
			for i := range list {
				for len(t.prefix) <= i {
					t.prefix = append(t.prefix, nil)
				}
				t.prefix[i] = append(t.prefix[i], at(k, fmt.Sprint(i)))
			}
		}
	}
}

// textWalk charges a call's strings to the subschemas that may apply.
type textWalk struct {
	a        *costAnalysis
	closures map[string]map[string]int64
	work     int64
}

// closure is ptr and every subschema its in-place applicators reach, with
// multiplicity (analyseCost refused cycles, so this ends).
func (w *textWalk) closure(ptr string) map[string]int64 {
	if c, ok := w.closures[ptr]; ok {
		return c
	}
	c := map[string]int64{ptr: 1}
	if n := w.a.nodes[ptr]; n != nil {
		for _, p := range n.inPlace {
			for q, m := range w.closure(p) {
				c[q] = satAdd(c[q], m)
			}
		}
	}
	w.closures[ptr] = c
	return c
}

// charge adds n bytes times weight to the work; it reports whether the
// work is still within MaxTextCost.
func (w *textWalk) charge(n int, weight int64) bool {
	w.work = satAdd(w.work, satMul(int64(n), weight))
	return w.work <= MaxTextCost
}

// value walks v with the subschemas in set applying to it (with
// multiplicity); false means the bound was passed.
func (w *textWalk) value(v any, set map[string]int64) bool {
	if len(set) == 0 {
		return true
	}
	flat := map[string]int64{}
	for p, m := range set {
		for q, k := range w.closure(p) {
			flat[q] = satAdd(flat[q], satMul(m, k))
		}
	}
	// The keywords of every subschema that applies, with its multiplicity
	// (the sums below do not depend on their order).
	type applied struct {
		t *textKeys
		m int64
	}
	nodes := make([]applied, 0, len(flat))
	for p, m := range flat {
		if n := w.a.nodes[p]; n != nil {
			nodes = append(nodes, applied{&n.text, m})
		}
	}
	switch t := v.(type) {
	case string:
		var own int64
		for _, a := range nodes {
			own = satAdd(own, satMul(a.m, a.t.own))
		}
		return w.charge(len(t), own)
	case map[string]any:
		var key int64
		for _, a := range nodes {
			key = satAdd(key, satMul(a.m, a.t.key))
		}
		for k, child := range t {
			cs, ns := map[string]int64{}, map[string]int64{}
			for _, a := range nodes {
				for _, c := range a.t.props[k] {
					cs[c] = satAdd(cs[c], a.m)
				}
				for _, c := range a.t.members {
					cs[c] = satAdd(cs[c], a.m)
				}
				for _, c := range a.t.names {
					ns[c] = satAdd(ns[c], a.m)
				}
			}
			if !w.charge(len(k), key) || !w.value(k, ns) || !w.value(child, cs) {
				return false
			}
		}
	case []any:
		for i, item := range t {
			cs := map[string]int64{}
			for _, a := range nodes {
				for _, c := range a.t.items {
					cs[c] = satAdd(cs[c], a.m)
				}
				if i < len(a.t.prefix) {
					for _, c := range a.t.prefix[i] {
						cs[c] = satAdd(cs[c], a.m)
					}
				}
			}
			if !w.value(item, cs) {
				return false
			}
		}
	}
	return true
}

// hasText reports whether any subschema reads strings by their length.
func (a *costAnalysis) hasText() bool {
	for _, n := range a.nodes {
		if n.text.own > 0 || n.text.key > 0 {
			return true
		}
	}
	return false
}

// perByteBound bounds what the walk charges one byte of any string value
// or member name: the subschemas that apply to one value at any depth
// (costs, with multiplicity, in-place applicators included) times the
// heaviest own or key weight — a key's bytes pay its object's key weights
// and the propertyNames subschemas of the next depth.
func (a *costAnalysis) perByteBound(costs []int64) int64 {
	var most, own, key int64
	for _, c := range costs {
		most = max(most, c)
	}
	for _, n := range a.nodes {
		own, key = max(own, n.text.own), max(key, n.text.key)
	}
	return satMul(most, satAdd(own, key))
}

// textBytes is the length of every string and member name in v.
func textBytes(v any) int64 {
	switch t := v.(type) {
	case string:
		return int64(len(t))
	case map[string]any:
		var n int64
		for k, c := range t {
			n = satAdd(n, satAdd(int64(len(k)), textBytes(c)))
		}
		return n
	case []any:
		var n int64
		for _, c := range t {
			n = satAdd(n, textBytes(c))
		}
		return n
	}
	return 0
}

// CheckTextCost bounds the text work of validating args; call it after
// CheckCost, which bounds the walk itself by the subschema count.
// Arguments whose bytes, each charged the most any byte can be, stay
// within MaxTextCost pass without the walk (no allocation): what most
// calls send.
func (s *Schema) CheckTextCost(args any) error {
	if s.text == nil {
		return nil
	}
	if satMul(textBytes(args), s.textPerByte) <= MaxTextCost {
		return nil
	}
	w := &textWalk{a: s.text, closures: map[string]map[string]int64{}}
	if !w.value(args, map[string]int64{"": 1}) {
		return fmt.Errorf("%w: the schema's patterns and length limits would read more than %d byte-steps of their strings; send shorter strings (or fewer of them) to this tool", ErrTextCost, MaxTextCost)
	}
	return nil
}
