package strictjson

import (
	"errors"
	"fmt"
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

// withDefaults fills lim's zero fields.
func (lim ValueLimits) withDefaults() ValueLimits {
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = MaxDepth
	}
	if lim.MaxNumberLen <= 0 {
		lim.MaxNumberLen = DefaultMaxNumberLen
	}
	if lim.MaxExponent <= 0 {
		lim.MaxExponent = DefaultMaxExponent
	}
	return lim
}

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
	lim = lim.withDefaults()
	if !utf8.Valid(data) {
		return Value{}, errorf(ErrInvalid, "not valid UTF-8")
	}
	sc := scanner{data: data, lim: lim, build: true, surrogate: -1}
	v, err := sc.value(0)
	if err != nil {
		return Value{}, err
	}
	if err := sc.finish(); err != nil {
		return Value{}, err
	}
	return Value{V: v, Nodes: sc.nodes}, nil
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
