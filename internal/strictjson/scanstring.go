package strictjson

import (
	"unicode/utf16"
	"unicode/utf8"
)

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
