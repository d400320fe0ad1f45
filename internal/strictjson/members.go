package strictjson

import (
	"unicode/utf8"
)

// maxSkipDepth bounds the nesting of the values Members skips, as
// encoding/json bounds what it decodes.
const maxSkipDepth = 10000

// Members reads data as one JSON object and calls fn with each member's
// key (decoded) and the exact bytes of its value, in document order; an
// error from fn ends the reading and is returned as it is. A value handed
// to fn is trusted only once Members returns nil. The object is
// read strictly — valid UTF-8, keys compared by what they say and never
// repeated, nothing but whitespace after it — and every value is checked
// for well-formedness, including unpaired surrogate escapes, without being
// decoded: a value's own keys, depth and numbers are its reader's to judge
// (Parse), which is why this costs one pass and no allocation per value.
func Members(data []byte, fn func(key string, value []byte) error) error {
	if !utf8.Valid(data) {
		return errorf(ErrInvalid, "not valid UTF-8")
	}
	s := scanner{data: data, lim: ValueLimits{MaxDepth: maxSkipDepth}, surrogate: -1}
	s.space()
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return s.syntax("a JSON object")
	}
	s.i++
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return s.finish()
	}
	var seen map[string]bool
	for {
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return s.syntax("a string for an object key")
		}
		s.build = true // keys are decoded, values skipped
		key, err := s.str()
		s.build = false
		if err != nil {
			return err
		}
		if seen[key] {
			return errorf(ErrInvalid, "duplicate key %q in $", Shown(key))
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[key] = true
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return s.syntax("':' after an object key")
		}
		s.i++
		s.space()
		start := s.i
		s.path = append(s.path[:0], segment{key: key, isKey: true})
		if _, err := s.value(1); err != nil {
			return err
		}
		s.path = s.path[:0]
		if err := fn(key, s.data[start:s.i]); err != nil {
			return err
		}
		if more, err := s.more('}', "',' or '}' after an object member"); err != nil {
			return err
		} else if !more {
			return s.finish()
		}
	}
}
