// Package strictjson decodes untrusted JSON documents without the ambiguities of
// encoding/json: duplicate keys, keys that differ only in case, unknown keys,
// invalid UTF-8 and trailing data are all errors, and nesting depth is bounded.
//
// A signature covers exact bytes; if two parsers could read those bytes
// differently, a reviewer could approve one meaning and the host could run
// another. Decode refuses every document that is not read one way only.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/clip"
)

// ErrInvalid is wrapped by every error Decode returns for a bad document.
var ErrInvalid = errors.New("invalid JSON document")

// Error is every error this package returns for a refused document: its
// kind (ErrInvalid or ErrBounds, which errors.Is finds) and what was wrong,
// which Detail gives a caller that words the kind itself.
type Error struct {
	Kind   error
	Detail string
}

func (e *Error) Error() string { return e.Kind.Error() + ": " + e.Detail }
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// maxShown bounds how much of a path or a key an error shows. A document
// may hold a key of a megabyte or nest thousands of levels deep; the error
// is for a person or a model to read, and names where, not everything.
const maxShown = 160

// Shown returns s, or, when it is longer than maxShown bytes, its start
// and its end around "…" (cut between UTF-8 characters).
func Shown(s string) string {
	if len(s) <= maxShown {
		return s
	}
	start, end, _ := clip.Middle(s, maxShown*2/3, maxShown/3)
	return start + "…" + end
}

// Detail is what was wrong with the document err refused, without the
// kind's words ("invalid JSON document: "); err's text for any other error.
func Detail(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Detail
	}
	return err.Error()
}

// MaxDepth bounds the nesting of any document Decode accepts.
const MaxDepth = 64

// Shape describes which object keys are allowed where. It is one of Object,
// ArrayOf or Any.
type Shape interface{ shape() }

// Object allows exactly the listed keys (case-sensitive); each maps to the
// shape of its value.
type Object map[string]Shape

// ArrayOf is an array whose elements have the shape Elem.
type ArrayOf struct{ Elem Shape }

// Any is any JSON value; objects inside it may hold any keys, but never the
// same key twice.
type Any struct{}

// MapOf is an object with any keys whose values all have shape Elem.
type MapOf struct{ Elem Shape }

func (MapOf) shape() {}

func (Object) shape()  {}
func (ArrayOf) shape() {}
func (Any) shape()     {}

// Decode checks data against shape and then unmarshals it into v.
func Decode(data []byte, shape Shape, v any) error {
	if err := Check(data, shape); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return typeError(te)
		}
		return errorf(ErrInvalid, "%v", err)
	}
	return nil
}

// typeError words a value of the wrong type for the document's author:
// the key's path and what it takes, not encoding/json's "Go struct field
// Limits.limits.timeout_ms of type uint32".
func typeError(te *json.UnmarshalTypeError) error {
	where := "the document"
	if te.Field != "" {
		where = Shown(te.Field)
	}
	return errorf(ErrInvalid, "%s: got %s, want %s", where, te.Value, wanted(te.Type))
}

// wanted says in JSON's words which values a Go type takes.
func wanted(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("a whole number from %d to %d", -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1)
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return "a base64 string"
		}
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return wanted(t.Elem())
	}
	return "a value of another type"
}

// Check reports whether data is one well-formed JSON value of the given shape.
func Check(data []byte, shape Shape) error {
	if !utf8.Valid(data) {
		return errorf(ErrInvalid, "not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	c := checker{dec: dec}
	if err := c.value(shape, "$", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(ErrInvalid, "unexpected data after the JSON value at byte %d", dec.InputOffset())
	}
	return checkSurrogates(data)
}

// checkSurrogates refuses \u escapes that encode half a UTF-16 surrogate
// pair. encoding/json silently turns them into U+FFFD while other parsers
// keep them or fail, so such a document is not read one way only. data must
// already be valid JSON.
func checkSurrogates(data []byte) error {
	inString, wantLow := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			inString = c == '"'
			continue
		}
		var r uint64 = 0xffffffff // not a \u escape
		switch c {
		case '"':
			inString = false
		case '\\':
			i++
			if data[i] == 'u' {
				r, _ = strconv.ParseUint(string(data[i+1:i+5]), 16, 32)
				i += 4
			}
		}
		isLow := r >= 0xdc00 && r <= 0xdfff
		if wantLow != isLow {
			return errorf(ErrInvalid, "unpaired UTF-16 surrogate escape before byte %d", i+1)
		}
		wantLow = r >= 0xd800 && r <= 0xdbff
	}
	return nil
}

type checker struct{ dec *json.Decoder }

func (c *checker) value(shape Shape, path string, depth int) error {
	tok, err := c.dec.Token()
	if err != nil {
		if err == io.EOF {
			return errorf(ErrInvalid, "document ends early at %s", Shown(path))
		}
		return errorf(ErrInvalid, "%v (at %s)", err, Shown(path))
	}
	// depth counts the objects and arrays around this value; only opening
	// another one can exceed the bound.
	if _, open := tok.(json.Delim); open && depth >= MaxDepth {
		return errorf(ErrInvalid, "nested deeper than %d levels at %s", MaxDepth, Shown(path))
	}
	switch tok {
	case json.Delim('{'):
		return c.object(shape, path, depth)
	case json.Delim('['):
		elem := shape
		if a, ok := shape.(ArrayOf); ok {
			elem = a.Elem
		} else if _, ok := shape.(Any); !ok {
			return errorf(ErrInvalid, "%s must not be an array", Shown(path))
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.value(elem, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		_, err := c.dec.Token() // ']'
		return wrapSyntax(err, path)
	default:
		_, isObj := shape.(Object)
		_, isMap := shape.(MapOf)
		if (isObj || isMap) && tok != nil {
			return errorf(ErrInvalid, "%s must be an object", Shown(path))
		}
		return nil
	}
}

func (c *checker) object(shape Shape, path string, depth int) error {
	fields, exact := shape.(Object)
	if _, ok := shape.(ArrayOf); ok {
		return errorf(ErrInvalid, "%s must be an array", Shown(path))
	}
	seen := map[string]bool{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return wrapSyntax(err, path)
		}
		key, _ := tok.(string)
		if seen[key] {
			return errorf(ErrInvalid, "duplicate key %q in %s", Shown(key), Shown(path))
		}
		seen[key] = true
		child := Shape(Any{})
		if m, ok := shape.(MapOf); ok {
			child = m.Elem
		}
		if exact {
			s, ok := fields[key]
			if !ok {
				return unknownKey(fields, key, path)
			}
			child = s
		}
		if err := c.value(child, path+"."+key, depth+1); err != nil {
			return err
		}
	}
	_, err := c.dec.Token() // '}'
	return wrapSyntax(err, path)
}

func unknownKey(fields Object, key, path string) error {
	for k := range fields {
		if strings.EqualFold(k, key) {
			return errorf(ErrInvalid, "key %q in %s differs from %q only in case: keys are case-sensitive", Shown(key), Shown(path), k)
		}
	}
	return errorf(ErrInvalid, "unknown key %q in %s", Shown(key), Shown(path))
}

func wrapSyntax(err error, path string) error {
	if err == nil {
		return nil
	}
	return errorf(ErrInvalid, "%v (at %s)", err, Shown(path))
}
