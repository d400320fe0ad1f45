package plugin

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Validation cost of a schema.
//
// A JSON Schema validator evaluates, at each value of the arguments, every
// subschema that applies there. References let a small schema apply the
// same subschema many times: {"allOf": [{"$ref": "#/$defs/a"}, {"$ref":
// "#/$defs/a"}]} doubles the work per level, so 30 levels cost 2^30
// evaluations for one value; a reference cycle through allOf never ends;
// and a cycle through "properties" that applies two copies of the root at
// each nested value doubles per level of the arguments. Validation of such
// a schema cannot be bounded by the size of the call.
//
// analyseCost computes, for every depth of the arguments, how many
// subschemas at most are evaluated at one value of that depth (following
// references, counting every applicator as if it applied). A schema whose
// cost per value exceeds MaxSchemaCostPerValue at some depth, or which has
// a reference cycle that stays on the same value, is refused at install.
// The per-depth costs then bound the work of one call: Σ values at depth d
// × cost at depth d, checked against MaxValidationCost before validating.

// Bounds on validation cost.
const (
	// MaxSchemaCostPerValue bounds the subschemas evaluated at one value
	// of the arguments. Hand-written schemas stay in the tens.
	MaxSchemaCostPerValue = 1024
	// MaxValidationCost bounds the subschema evaluations of one call,
	// about 0.1 s of validation on a slow machine.
	MaxValidationCost = 1 << 20
	// maxCostDepth is the deepest argument value (strictjson.MaxDepth).
	maxCostDepth = 64
)

const saturated = int64(1) << 50

func satAdd(a, b int64) int64 { return min(a+b, saturated) }
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > saturated/b {
		return saturated
	}
	return a * b
}

// In-place applicators evaluate their subschemas on the same value;
// descending ones on the value's members or items.
var (
	inPlaceOne   = []string{"not", "if", "then", "else"}
	inPlaceList  = []string{"allOf", "anyOf", "oneOf"}
	inPlaceMap   = []string{"dependentSchemas", "dependencies"}
	descendOne   = []string{"items", "additionalItems", "additionalProperties", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
	descendList  = []string{"prefixItems", "items"}
	descendMap   = []string{"properties", "patternProperties"}
	dynamicRefer = []string{"$dynamicRef", "$recursiveRef"}
)

type costNode struct {
	inPlace []string // pointers, one per application
	descend []string
	// state of the in-place expansion: 0 new, 1 on the stack, 2 done.
	state int
	text  textKeys         // what reads strings, and where descents lead (textcost.go)
	size  int64            // subschemas evaluated on one value when this node applies
	child map[string]int64 // subschemas applied to one member, with multiplicity
}

type costAnalysis struct {
	doc     any
	anchors map[string]string // $anchor name → pointer
	nodes   map[string]*costNode
}

// analyseCost returns the worst-case number of subschemas evaluated at one
// value of each depth (index 0 is the arguments object), or why the schema
// is refused.
func analyseCost(doc any) ([]int64, *costAnalysis, error) {
	a := &costAnalysis{doc: doc, anchors: map[string]string{}, nodes: map[string]*costNode{}}
	a.collectAnchors(doc, "")
	if _, err := a.expand(""); err != nil {
		return nil, nil, err
	}
	level := map[string]int64{"": 1}
	var costs []int64
	for depth := 0; depth <= maxCostDepth && len(level) > 0; depth++ {
		var cost int64
		next := map[string]int64{}
		for ptr, n := range level {
			node := a.nodes[ptr]
			cost = satAdd(cost, satMul(n, node.size))
			for c, m := range node.child {
				if _, err := a.expand(c); err != nil {
					return nil, nil, err
				}
				next[c] = satAdd(next[c], satMul(n, m))
			}
		}
		if cost > MaxSchemaCostPerValue {
			return nil, nil, fmt.Errorf("validating one argument value %d levels deep could evaluate %s subschemas (the limit is %d): references (\"$ref\") apply the same subschemas over and over; write the schema without repeated references", depth, costText(cost), MaxSchemaCostPerValue)
		}
		costs = append(costs, cost)
		level = next
	}
	return costs, a, nil
}

func costText(n int64) string {
	if n >= saturated {
		return "more than 10^15"
	}
	return fmt.Sprint(n)
}

// expand computes node.size and node.child for the schema at ptr,
// following in-place applicators and references.
func (a *costAnalysis) expand(ptr string) (*costNode, error) {
	node, err := a.node(ptr)
	if err != nil {
		return nil, err
	}
	switch node.state {
	case 2:
		return node, nil
	case 1:
		return nil, fmt.Errorf("the subschema at %q refers back to itself without descending into the arguments (a $ref cycle through allOf/anyOf/oneOf/not/if/then/else or $ref): its validation never ends", "#"+ptr)
	}
	node.state = 1
	node.size = 1
	node.child = map[string]int64{}
	for _, c := range node.descend {
		node.child[c]++
	}
	for _, c := range node.inPlace {
		cn, err := a.expand(c)
		if err != nil {
			return nil, err
		}
		node.size = satAdd(node.size, cn.size)
		for g, m := range cn.child {
			node.child[g] = satAdd(node.child[g], m)
		}
	}
	node.state = 2
	return node, nil
}

// node reads the subschema at ptr and lists where its applicators lead.
func (a *costAnalysis) node(ptr string) (*costNode, error) {
	if n, ok := a.nodes[ptr]; ok {
		return n, nil
	}
	v, ok := lookupPointer(a.doc, ptr)
	if !ok {
		return nil, fmt.Errorf("$ref %q points to nothing in the schema", "#"+ptr)
	}
	n := &costNode{}
	a.nodes[ptr] = n
	obj, isObj := v.(map[string]any)
	if !isObj {
		return n, nil // true, false or not a schema (the compiler says which)
	}
	at := func(key string, more ...string) string {
		p := ptr + "/" + escapePointer(key)
		for _, m := range more {
			p += "/" + escapePointer(m)
		}
		return p
	}
	n.readText(obj, at)
	for _, k := range dynamicRefer {
		if _, ok := obj[k]; ok {
			return nil, fmt.Errorf("%s at %q is not allowed in tool parameters: dynamic references make the cost of validation unbounded; use $ref", k, "#"+ptr)
		}
	}
	if ref, ok := obj["$ref"].(string); ok {
		target, err := a.resolve(ref)
		if err != nil {
			return nil, err
		}
		n.inPlace = append(n.inPlace, target)
	}
	for _, k := range inPlaceOne {
		if _, ok := obj[k].(map[string]any); ok {
			n.inPlace = append(n.inPlace, at(k))
		}
	}
	for _, k := range inPlaceList {
		if list, ok := obj[k].([]any); ok {
			for i := range list {
				n.inPlace = append(n.inPlace, at(k, fmt.Sprint(i)))
			}
		}
	}
	for _, k := range inPlaceMap {
		if m, ok := obj[k].(map[string]any); ok {
			for name, s := range m {
				if _, ok := s.(map[string]any); ok {
					n.inPlace = append(n.inPlace, at(k, name))
				}
			}
		}
	}
	for _, k := range descendOne {
		if _, ok := obj[k].(map[string]any); ok {
			n.descend = append(n.descend, at(k))
		}
	}
	for _, k := range descendList {
		if list, ok := obj[k].([]any); ok {
			for i := range list {
				n.descend = append(n.descend, at(k, fmt.Sprint(i)))
			}
		}
	}
	for _, k := range descendMap {
		if m, ok := obj[k].(map[string]any); ok {
			for name := range m {
				n.descend = append(n.descend, at(k, name))
			}
		}
	}
	return n, nil
}

// resolve turns a reference inside the document ("#", "#/json/pointer",
// "#anchor") into a JSON pointer.
func (a *costAnalysis) resolve(ref string) (string, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return "", fmt.Errorf("$ref %q: only references inside the schema (starting with #) are allowed", truncate(ref))
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return "", fmt.Errorf("$ref %q: %v", truncate(ref), err)
	}
	if frag == "" || strings.HasPrefix(frag, "/") {
		return frag, nil
	}
	if p, ok := a.anchors[frag]; ok {
		return p, nil
	}
	return "", fmt.Errorf("$ref %q names no $anchor of the schema", truncate(ref))
}

func (a *costAnalysis) collectAnchors(v any, ptr string) {
	switch t := v.(type) {
	case map[string]any:
		if name, ok := t["$anchor"].(string); ok {
			a.anchors[name] = ptr
		}
		for k, c := range t {
			a.collectAnchors(c, ptr+"/"+escapePointer(k))
		}
	case []any:
		for i, c := range t {
			a.collectAnchors(c, fmt.Sprintf("%s/%d", ptr, i))
		}
	}
}

func escapePointer(s string) string { return pointerEscaper.Replace(s) }

// lookupPointer follows a JSON pointer (RFC 6901) into doc.
func lookupPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := v.(type) {
		case map[string]any:
			c, ok := t[tok]
			if !ok {
				return nil, false
			}
			v = c
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(t) || fmt.Sprint(i) != tok {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// ErrValidationCost is returned by Schema.CheckCost for arguments whose
// validation would cost more than MaxValidationCost.
var ErrValidationCost = errors.New("arguments too large for the tool's schema")

// CheckCost bounds the validation of arguments with nodes[d] values at
// depth d (strictjson.Value.Nodes) before Validate runs.
func (s *Schema) CheckCost(nodes []int) error {
	var total int64
	for d, n := range nodes {
		c := int64(0)
		if d < len(s.costs) {
			c = s.costs[d]
		}
		total = satAdd(total, satMul(int64(n), c))
	}
	if total > MaxValidationCost {
		return fmt.Errorf("%w: checking them against the schema could take %s subschema evaluations (the limit is %d); send fewer values", ErrValidationCost, costText(total), MaxValidationCost)
	}
	return nil
}
