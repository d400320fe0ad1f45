package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// encode returns the canonical line of r (without newline) and its hash.
// r.Hash is ignored.
//
// The canonical line is encoding/json's encoding of Record (HTML escaping
// off) without the hash member; the hash is the sha256 of that, and the
// line then carries it as its last member. appendRecord writes the same
// bytes directly, at a fraction of the cost (it runs for every call, under
// the log's lock); records it does not cover (argument values, which
// encoding/json compacts, and values encoding/json refuses) go through
// encoding/json itself. FuzzEncodeMatchesJSON holds the two to the same
// bytes.
func encode(r Record) (line []byte, hash string, err error) {
	body, ok := appendRecord(make([]byte, 0, 1024), &r)
	if !ok {
		if body, err = encodeJSON(r); err != nil {
			return nil, "", err
		}
	}
	sum := sha256.Sum256(body)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	line = append(append(append(body[:len(body)-1:len(body)-1], `,"hash":"`...), h[:]...), `"}`...)
	return line, string(h[:]), nil
}

// encodeJSON is the hashed body of r by encoding/json: the record without
// its hash member.
func encodeJSON(r Record) ([]byte, error) {
	r.Hash = ""
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	full := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// full ends with `,"hash":""}`; the hashed body is full without that
	// member.
	const emptyHash = `,"hash":""}`
	return append(bytes.TrimSuffix(full, []byte(emptyHash)), '}'), nil
}

// appendRecord appends the hashed body of r (see encode) to dst: the
// members of Record in order, "omitempty" ones only when set. ok is false
// for a record it leaves to encoding/json: one with argument values, a
// time encoding/json would refuse (a year outside 0-9999), or a duration
// that is not a finite number.
func appendRecord(dst []byte, r *Record) (_ []byte, ok bool) {
	if r.Arguments != nil || !finite(r.DurationMS) || !finite(r.WaitedMS) {
		return dst, false
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, r.Seq, 10)
	dst = append(dst, `,"time":"`...)
	var err error
	if dst, err = r.Time.AppendText(dst); err != nil {
		return dst, false
	}
	dst = append(dst, `","prev":`...)
	dst = appendJSONString(dst, r.Prev)
	dst = append(dst, `,"kind":`...)
	dst = appendJSONString(dst, r.Kind)
	for _, m := range [...]struct{ key, value string }{
		{`,"entry":`, r.Entry}, {`,"tool":`, r.Tool}, {`,"plugin":`, r.Plugin},
		{`,"digest":`, r.Digest}, {`,"arguments_sha256":`, r.ArgumentsSHA256},
		{`,"decision":`, r.Decision}, {`,"decided_by":`, r.DecidedBy},
		{`,"outcome":`, r.Outcome}, {`,"message":`, r.Message},
	} {
		if m.value != "" {
			dst = appendJSONString(append(dst, m.key...), m.value)
		}
	}
	if r.DurationMS != 0 {
		dst = appendJSONFloat(append(dst, `,"duration_ms":`...), r.DurationMS)
	}
	if r.WaitedMS != 0 {
		dst = appendJSONFloat(append(dst, `,"waited_ms":`...), r.WaitedMS)
	}
	for _, m := range [...]struct{ key, value string }{
		{`,"action":`, r.Action}, {`,"subject":`, r.Subject},
		{`,"detail":`, r.Detail}, {`,"actor":`, r.Actor},
	} {
		if m.value != "" {
			dst = appendJSONString(append(dst, m.key...), m.value)
		}
	}
	if r.StoreSeq != 0 {
		dst = strconv.AppendUint(append(dst, `,"store_seq":`...), r.StoreSeq, 10)
	}
	if r.StoreID != "" {
		dst = appendJSONString(append(dst, `,"store_id":`...), r.StoreID)
	}
	return append(dst, '}'), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendJSONFloat writes f as encoding/json writes a float64: the
// shortest decimal that reads back as f, in exponent form below 1e-6 and
// from 1e21 up, with a one-digit negative exponent unpadded (1e-07 is
// written 1e-7).
func appendJSONFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); n-start >= 4 && string(dst[n-4:n-1]) == "e-0" {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendJSONString writes s as a JSON string the way encoding/json does
// with HTML escaping off: `"` and `\` escaped, control characters as \b,
// \f, \n, \r, \t or \u00XX, each byte of invalid UTF-8 as \ufffd, and
// U+2028 and U+2029 (which end lines in JavaScript) as \u2028 and \u2029;
// everything else as it is.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	done := 0 // s[:done] is written
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[done:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, `\b`...)
			case '\f':
				dst = append(dst, `\f`...)
			case '\n':
				dst = append(dst, `\n`...)
			case '\r':
				dst = append(dst, `\r`...)
			case '\t':
				dst = append(dst, `\t`...)
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			done = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[done:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[done:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		done = i
	}
	return append(append(dst, s[done:]...), '"')
}
