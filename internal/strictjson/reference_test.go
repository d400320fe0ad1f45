package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// referenceParse is the Token-based Parse that the hand-written scanner
// replaced, kept as the specification FuzzParseMatchesReference holds the
// scanner to: encoding/json's tokenizer decides the grammar, the checks on
// top of it are the same.
func referenceParse(data []byte, lim ValueLimits) (Value, error) {
	lim = lim.withDefaults()
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
