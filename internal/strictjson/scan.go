package strictjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
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

// str reads a string at s.i (a '"'), decoding it when building. It notes
// the first unpaired surrogate escape where checkSurrogates would.
func (s *scanner) str() (string, error) {
	s.i++ // '"'
	start := s.i
	// The common case: no escapes, one copy.
	for s.i < len(s.data) {
		c := s.data[s.i]
		if c == '"' {
			s.i++
			if !s.build {
				return "", nil
			}
			return string(s.data[start : s.i-1]), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		s.i++
	}
	var buf []byte
	if s.build {
		buf = append(make([]byte, 0, s.i-start+16), s.data[start:s.i]...)
	}
	wantLow := false // the previous character was a high surrogate escape
	for {
		if s.i >= len(s.data) {
			return "", s.syntax("the end of a string")
		}
		c := s.data[s.i]
		switch {
		case c == '"':
			s.pair(wantLow, false, s.i)
			s.i++
			return string(buf), nil
		case c < 0x20:
			return "", s.syntax("a character of a string (control characters must be escaped)")
		case c != '\\':
			s.pair(wantLow, false, s.i)
			wantLow = false
			if s.build {
				buf = append(buf, c)
			}
			s.i++
			continue
		}
		// An escape.
		s.i++
		if s.i >= len(s.data) {
			return "", s.syntax("an escape")
		}
		e := s.data[s.i]
		if e != 'u' {
			var b byte
			switch e {
			case '"', '\\', '/':
				b = e
			case 'b':
				b = '\b'
			case 'f':
				b = '\f'
			case 'n':
				b = '\n'
			case 'r':
				b = '\r'
			case 't':
				b = '\t'
			default:
				return "", s.syntax(`an escape (\" \\ \/ \b \f \n \r \t or \uXXXX)`)
			}
			s.pair(wantLow, false, s.i)
			wantLow = false
			if s.build {
				buf = append(buf, b)
			}
			s.i++
			continue
		}
		r, ok := hex4(s.data, s.i+1)
		if !ok {
			for k := 1; k <= 4; k++ { // name the bad digit, or the end
				if s.i+k >= len(s.data) || !isHex(s.data[s.i+k]) {
					s.i += k
					return "", s.syntax("a hexadecimal digit in a \\u escape")
				}
			}
			return "", s.syntax("a \\u escape")
		}
		s.i += 4 // the last hex digit: where checkSurrogates stands
		isLow := r >= 0xdc00 && r <= 0xdfff
		s.pair(wantLow, isLow, s.i)
		s.i++
		wantLow = r >= 0xd800 && r <= 0xdbff
		if wantLow {
			// A high surrogate: with a \u low surrogate right after it,
			// the two are one rune, as encoding/json decodes them.
			if r2, ok := s.lowEscape(); ok {
				s.i += 5
				s.pair(true, true, s.i)
				s.i++
				wantLow = false
				if s.build {
					buf = utf8.AppendRune(buf, utf16.DecodeRune(r, r2))
				}
				continue
			}
		}
		if s.build {
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError // unpaired: the document is refused at the end
			}
			buf = utf8.AppendRune(buf, r)
		}
	}
}

// lowEscape reads a \u escape of a low surrogate at s.i, without moving.
func (s *scanner) lowEscape() (rune, bool) {
	if s.i+6 > len(s.data) || s.data[s.i] != '\\' || s.data[s.i+1] != 'u' {
		return 0, false
	}
	r, ok := hex4(s.data, s.i+2)
	return r, ok && r >= 0xdc00 && r <= 0xdfff
}

// pair notes an unpaired surrogate at the character ending at byte at: a
// low surrogate escape must follow a high one, and only one may.
func (s *scanner) pair(wantLow, isLow bool, at int) {
	if wantLow != isLow && s.surrogate < 0 {
		s.surrogate = at + 1
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// hex4 reads four hexadecimal digits at data[at:].
func hex4(data []byte, at int) (rune, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
