package strictjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// scanner reads one JSON document byte by byte, in one pass: it checks the
// grammar (RFC 8259, exactly what encoding/json accepts), refuses duplicate
// keys and what ValueLimits bounds, and — when build is set — decodes the
// values as Parse documents them. It is Parse's engine and Members' checker.
//
// It is written by hand because Parse runs on every tool call's arguments:
// encoding/json's Decoder.Token allocated per token and cost ~6 µs for a
// four-key object. Its contract is the one the Token-based parser it
// replaced had; FuzzParseMatchesReference holds it to that parser (kept in
// the tests): the same documents accepted, the same values and node counts,
// the same kind of error (ErrInvalid or ErrBounds) for every refused one.
//
// Errors come in document order, as a streaming parser finds them, with one
// exception kept from the reference: an unpaired UTF-16 surrogate escape is
// reported only once the rest of the document has parsed.
type scanner struct {
	data  []byte
	i     int
	lim   ValueLimits
	build bool
	nodes []int
	// path holds the keys and indexes down to the current value; it is
	// turned into text only for an error.
	path []segment
	// surrogate is the offset checkSurrogates would name for the first
	// unpaired surrogate escape, or -1.
	surrogate int
}

// finish checks what follows the value and reports a pending surrogate.
func (s *scanner) finish() error {
	s.space()
	if s.i < len(s.data) {
		return errorf(ErrInvalid, "unexpected data after the JSON value at byte %d", s.i)
	}
	if s.surrogate >= 0 {
		return errorf(ErrInvalid, "unpaired UTF-16 surrogate escape before byte %d", s.surrogate)
	}
	return nil
}

// segment is a key (decoded, or as written when values are skipped) or an
// array index.
type segment struct {
	key   string
	raw   []byte
	index int
	isKey bool
}

func (s *scanner) where() string {
	var b strings.Builder
	b.WriteString("$")
	for _, seg := range s.path {
		switch {
		case !seg.isKey:
			fmt.Fprintf(&b, "[%d]", seg.index)
		case seg.raw != nil:
			fmt.Fprintf(&b, ".%s", Shown(string(seg.raw)))
		default:
			fmt.Fprintf(&b, ".%s", Shown(seg.key))
		}
	}
	return Shown(b.String())
}

func (s *scanner) count(depth int) {
	if !s.build {
		return
	}
	for len(s.nodes) <= depth {
		s.nodes = append(s.nodes, 0)
	}
	s.nodes[depth]++
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// syntax is the error for the byte at s.i (or the end), which is not what
// the grammar allows there; want says what would have been.
func (s *scanner) syntax(want string) error {
	if s.i >= len(s.data) {
		return errorf(ErrInvalid, "document ends early at %s, expecting %s", s.where(), want)
	}
	r, _ := utf8.DecodeRune(s.data[s.i:])
	return errorf(ErrInvalid, "invalid character %q at byte %d, expecting %s (at %s)", r, s.i, want, s.where())
}

func (s *scanner) value(depth int) (any, error) {
	s.space()
	if s.i >= len(s.data) {
		return nil, errorf(ErrInvalid, "document ends early at %s", s.where())
	}
	s.count(depth)
	switch c := s.data[s.i]; {
	case c == '{':
		if depth >= s.lim.MaxDepth {
			return nil, errorf(ErrBounds, "nested deeper than %d levels at %s", s.lim.MaxDepth, s.where())
		}
		return s.object(depth)
	case c == '[':
		if depth >= s.lim.MaxDepth {
			return nil, errorf(ErrBounds, "nested deeper than %d levels at %s", s.lim.MaxDepth, s.where())
		}
		return s.array(depth)
	case c == '"':
		str, err := s.str()
		if err != nil || !s.build {
			return nil, err
		}
		return str, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	default:
		return nil, s.syntax("the beginning of a value")
	}
}

func (s *scanner) object(depth int) (any, error) {
	s.i++ // '{'
	var obj map[string]any
	if s.build {
		obj = map[string]any{}
	}
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return ret(obj, s.build), nil
	}
	for {
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return nil, s.syntax("a string for an object key")
		}
		seg := segment{isKey: true}
		if s.build {
			key, err := s.str()
			if err != nil {
				return nil, err
			}
			// Duplicates are compared by what the keys say, not how they
			// are spelled.
			if _, dup := obj[key]; dup {
				return nil, errorf(ErrInvalid, "duplicate key %q in %s", Shown(key), s.where())
			}
			seg.key = key
		} else {
			// Skipped values are checked for well-formedness only: their
			// keys are neither decoded nor compared.
			start := s.i
			if _, err := s.str(); err != nil {
				return nil, err
			}
			seg.raw = s.data[start+1 : s.i-1]
		}
		s.count(depth + 1)
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return nil, s.syntax("':' after an object key")
		}
		s.i++
		s.path = append(s.path, seg)
		v, err := s.value(depth + 1)
		if err != nil {
			return nil, err
		}
		s.path = s.path[:len(s.path)-1]
		if s.build {
			obj[seg.key] = v
		}
		if more, err := s.more('}', "',' or '}' after an object member"); !more || err != nil {
			return ret(obj, s.build && err == nil), err
		}
	}
}

func (s *scanner) array(depth int) (any, error) {
	s.i++ // '['
	var arr []any
	if s.build {
		arr = []any{}
	}
	s.space()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		return ret(arr, s.build), nil
	}
	for n := 0; ; n++ {
		s.path = append(s.path, segment{index: n})
		v, err := s.value(depth + 1)
		if err != nil {
			return nil, err
		}
		s.path = s.path[:len(s.path)-1]
		if s.build {
			arr = append(arr, v)
		}
		if more, err := s.more(']', "',' or ']' after an array element"); !more || err != nil {
			return ret(arr, s.build && err == nil), err
		}
	}
}

// more reads what follows a member or an element: a ',' (another one
// comes: true) or end (the container is done: false).
func (s *scanner) more(end byte, want string) (bool, error) {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == ',' {
		s.i++
		return true, nil
	}
	if s.i < len(s.data) && s.data[s.i] == end {
		s.i++
		return false, nil
	}
	return false, s.syntax(want)
}

// ret boxes a container only when values are built: a skipped value is nil.
func ret[T any](v T, build bool) any {
	if !build {
		return nil
	}
	return v
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.i >= len(word) && string(s.data[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return nil
	}
	// Name the first byte that differs, or the end.
	for k := 0; k < len(word); k++ {
		if s.i >= len(s.data) || s.data[s.i] != word[k] {
			return s.syntax(fmt.Sprintf("%q", word))
		}
		s.i++
	}
	return nil
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? and checks
// it against the limits as soon as it is read, as the reference did.
func (s *scanner) number() (any, error) {
	start := s.i
	if s.data[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.data) && s.data[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return nil, s.syntax("a digit in a number")
	}
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return nil, s.syntax("a digit after a decimal point")
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, s.syntax("a digit in an exponent")
		}
	}
	lit := s.data[start:s.i]
	if !s.build {
		return nil, nil // skipped: well-formed is all that is asked
	}
	if err := checkNumber(string(lit), s.lim); err != nil {
		return nil, errorf(ErrBounds, "%s: %v", s.where(), err)
	}
	return json.Number(lit), nil
}
