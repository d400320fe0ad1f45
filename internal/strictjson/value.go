package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValueLimits bound what Parse accepts beyond well-formedness. Zero fields
// take the defaults below.
type ValueLimits struct {
	// MaxDepth bounds the nesting of objects and arrays (default MaxDepth).
	MaxDepth int
	// MaxNumberLen bounds the length of a number literal in bytes
	// (default DefaultMaxNumberLen).
	MaxNumberLen int
	// MaxExponent bounds the magnitude of a number's decimal exponent,
	// written and implied alike: 1e400 and 0.000…01 with 400 zeros both
	// have exponent ±400 (default DefaultMaxExponent).
	MaxExponent int
}

// Defaults of ValueLimits. A float64 spans exponents -324…308 and an
// int64 19 digits: no tool needs numbers that neither can hold, and
// exact-arithmetic validators (JSON Schema's multipleOf, minimum…) spend
// time and memory growing with the exponent: 1e999999 is a million-digit
// integer to them.
const (
	DefaultMaxNumberLen = 100
	DefaultMaxExponent  = 400
)

// ErrBounds is wrapped by Parse's errors for a document that is valid JSON
// but exceeds a ValueLimits bound.
var ErrBounds = errors.New("JSON value out of bounds")

// Value is a parsed document: objects are map[string]any, arrays []any,
// numbers json.Number (exact, as written), strings, bools and nil.
type Value struct {
	V any
	// Nodes counts the values at each depth (0 is the document itself);
	// an object's keys count at the depth of its members, since schemas
	// (propertyNames) validate them too. Its length is the document's
	// depth plus one.
	Nodes []int
}

// Parse reads data as one JSON value, refusing the same documents Check
// refuses (duplicate keys, invalid UTF-8, unpaired surrogates, trailing
// data) and those beyond lim, and returns it decoded in the same pass.
func Parse(data []byte, lim ValueLimits) (Value, error) {
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = MaxDepth
	}
	if lim.MaxNumberLen <= 0 {
		lim.MaxNumberLen = DefaultMaxNumberLen
	}
	if lim.MaxExponent <= 0 {
		lim.MaxExponent = DefaultMaxExponent
	}
	if !utf8.Valid(data) {
		return Value{}, fmt.Errorf("%w: not valid UTF-8", ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := parser{dec: dec, lim: lim}
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Value{}, fmt.Errorf("%w: unexpected data after the JSON value at byte %d", ErrInvalid, dec.InputOffset())
	}
	if err := checkSurrogates(data); err != nil {
		return Value{}, err
	}
	return Value{V: v, Nodes: p.nodes}, nil
}

type parser struct {
	dec   *json.Decoder
	lim   ValueLimits
	nodes []int
	// path holds the keys and indexes down to the current value; it is
	// turned into text only for an error.
	path []any
}

func (p *parser) where() string {
	var b strings.Builder
	b.WriteString("$")
	for _, seg := range p.path {
		switch s := seg.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			fmt.Fprintf(&b, ".%s", s)
		}
	}
	return b.String()
}

func (p *parser) count(depth int) {
	for len(p.nodes) <= depth {
		p.nodes = append(p.nodes, 0)
	}
	p.nodes[depth]++
}

func (p *parser) value(depth int) (any, error) {
	tok, err := p.dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: document ends early at %s", ErrInvalid, p.where())
		}
		return nil, fmt.Errorf("%w: %v (at %s)", ErrInvalid, err, p.where())
	}
	p.count(depth)
	switch t := tok.(type) {
	case json.Delim:
		if depth >= p.lim.MaxDepth {
			return nil, fmt.Errorf("%w: nested deeper than %d levels at %s", ErrBounds, p.lim.MaxDepth, p.where())
		}
		if t == '[' {
			arr := []any{}
			for i := 0; p.dec.More(); i++ {
				p.path = append(p.path, i)
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				p.path = p.path[:len(p.path)-1]
				arr = append(arr, v)
			}
			_, err := p.dec.Token()
			return arr, wrapSyntax(err, p.where())
		}
		obj := map[string]any{}
		for p.dec.More() {
			tok, err := p.dec.Token()
			if err != nil {
				return nil, wrapSyntax(err, p.where())
			}
			key, _ := tok.(string)
			if _, dup := obj[key]; dup {
				return nil, fmt.Errorf("%w: duplicate key %q in %s", ErrInvalid, key, p.where())
			}
			p.count(depth + 1)
			p.path = append(p.path, key)
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			p.path = p.path[:len(p.path)-1]
			obj[key] = v
		}
		_, err := p.dec.Token()
		return obj, wrapSyntax(err, p.where())
	case json.Number:
		if err := checkNumber(string(t), p.lim); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBounds, p.where(), err)
		}
		return t, nil
	default:
		return t, nil
	}
}

// checkNumber bounds a number literal that the decoder already found well
// formed: its length, and its decimal exponent (the written one plus the
// digits before the point, minus the zeros after it).
func checkNumber(lit string, lim ValueLimits) error {
	if len(lit) > lim.MaxNumberLen {
		return fmt.Errorf("the number literal is %d characters long; numbers are limited to %d (send long values as strings)", len(lit), lim.MaxNumberLen)
	}
	mant, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		e, err := strconv.Atoi(lit[i+1:])
		if err != nil || e > lim.MaxExponent*2 || e < -lim.MaxExponent*2 {
			// Atoi fails only beyond int range: out of bounds either way.
			return fmt.Errorf("the number %s has an exponent beyond ±%d, which no tool needs (send it as a string if it is an identifier)", lit, lim.MaxExponent)
		}
		exp = e
	}
	// The magnitude is about 10^(exp + position of the first nonzero digit).
	intPart, frac, _ := strings.Cut(mant, ".")
	intPart = strings.TrimLeft(intPart, "-0")
	switch {
	case intPart != "":
		exp += len(intPart) - 1
	default:
		zeros := len(frac) - len(strings.TrimLeft(frac, "0"))
		if zeros == len(frac) {
			return nil // zero, whatever its exponent
		}
		exp -= zeros + 1
	}
	if exp > lim.MaxExponent || exp < -lim.MaxExponent {
		return fmt.Errorf("the number %s is about 1e%d, beyond ±1e%d, which no tool needs (send it as a string if it is an identifier)", lit, exp, lim.MaxExponent)
	}
	return nil
}
