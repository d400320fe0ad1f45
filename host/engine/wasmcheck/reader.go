package wasmcheck

import (
	"fmt"
	"unicode/utf8"
)

// reader reads b[pos:end]. Reads never go past end; every failure is an
// *Error carrying the absolute offset and the current section name.
type reader struct {
	b   []byte
	pos int
	end int
	sec string
}

func (r *reader) remaining() int { return r.end - r.pos }

func (r *reader) errf(off int, format string, args ...any) *Error {
	return &Error{Offset: off, Section: r.sec, Reason: fmt.Sprintf(format, args...)}
}

func (r *reader) truncated(what string) *Error {
	return r.errf(r.pos, "unexpected end of section while reading %s", what)
}

func (r *reader) byte1(what string) (byte, error) {
	if r.pos >= r.end {
		return 0, r.truncated(what)
	}
	b := r.b[r.pos]
	r.pos++
	return b, nil
}

func (r *reader) skip(n int, what string) error {
	if n < 0 || n > r.remaining() {
		return r.truncated(what)
	}
	r.pos += n
	return nil
}

// leb reads an unsigned or signed LEB128 of at most bits bits. The encoding
// may be padded (0x80 0x00 is a valid 0) but not longer than ceil(bits/7)
// bytes, and the unused bits of the last byte must be zero (unsigned) or
// copies of the sign bit (signed).
func (r *reader) leb(bits uint, signed bool, what string) (uint64, error) {
	start := r.pos
	maxBytes := int((bits + 6) / 7)
	var v uint64
	for i := 0; ; i++ {
		if r.pos >= r.end {
			return 0, r.errf(start, "truncated LEB128 while reading %s", what)
		}
		b := r.b[r.pos]
		r.pos++
		shift := uint(7 * i)
		if i == maxBytes-1 {
			if b&0x80 != 0 {
				return 0, r.errf(start, "LEB128 %s is longer than %d bytes", what, maxBytes)
			}
			used := bits - shift // payload bits that belong to the value
			extra := b & 0x7f >> used
			if !signed {
				if extra != 0 {
					return 0, r.errf(start, "LEB128 %s overflows %d bits", what, bits)
				}
			} else {
				sign := b >> (used - 1) & 1
				allOnes := byte(0x7f) >> used
				if (sign == 0 && extra != 0) || (sign == 1 && extra != allOnes) {
					return 0, r.errf(start, "LEB128 %s overflows %d bits", what, bits)
				}
			}
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			if signed && b&0x40 != 0 && shift+7 < 64 {
				v |= ^uint64(0) << (shift + 7) // sign-extend
			}
			return v, nil
		}
	}
}

func (r *reader) u32(what string) (uint32, error) {
	v, err := r.leb(32, false, what)
	return uint32(v), err
}

func (r *reader) u64(what string) (uint64, error) { return r.leb(64, false, what) }

// count reads a vector length and checks that the remaining bytes of the
// current region can hold that many elements of at least minSize bytes each.
// This is the check that must precede any allocation sized by the count.
func (r *reader) count(what string, minSize int) (int, error) {
	off := r.pos
	n, err := r.u32(what + " count")
	if err != nil {
		return 0, err
	}
	rem := r.remaining()
	if uint64(n)*uint64(minSize) > uint64(rem) {
		if minSize > 1 {
			return 0, r.errf(off, "declares %d %s (at least %d bytes each) but only %d bytes remain", n, what, minSize, rem)
		}
		return 0, r.errf(off, "declares %d %s but only %d bytes remain", n, what, rem)
	}
	return int(n), nil
}

// name reads a length-prefixed UTF-8 string.
func (r *reader) name(what string) (string, error) {
	off := r.pos
	n, err := r.u32(what + " length")
	if err != nil {
		return "", err
	}
	if uint64(n) > uint64(r.remaining()) {
		return "", r.errf(off, "%s of %d bytes but only %d bytes remain", what, n, r.remaining())
	}
	s := r.b[r.pos : r.pos+int(n)]
	if !utf8.Valid(s) {
		return "", r.errf(off, "%s is not valid UTF-8", what)
	}
	r.pos += int(n)
	return string(s), nil
}

// sub returns a reader over the next n bytes and advances r past them.
func (r *reader) sub(n uint32, sec, what string, off int) (*reader, error) {
	if uint64(n) > uint64(r.remaining()) {
		return nil, r.errf(off, "%s of %d bytes but only %d bytes remain", what, n, r.remaining())
	}
	s := &reader{b: r.b, pos: r.pos, end: r.pos + int(n), sec: sec}
	r.pos += int(n)
	return s, nil
}
