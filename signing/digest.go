package signing

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// Digest identifies one exact plugin: its manifest bytes and its wasm.
type Digest [32]byte

const digestPrefix = "sha256:"

// digestDomain separates plugin digests from any other sha256 in the system.
const digestDomain = "toolhost plugin digest v1\x00"

// PluginDigest returns the digest of a plugin made of the exact manifest
// bytes and the wasm module whose sha256 is wasmSHA256.
func PluginDigest(manifest []byte, wasmSHA256 [32]byte) Digest {
	h := sha256.New()
	h.Write([]byte(digestDomain))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(manifest)))
	h.Write(n[:])
	h.Write(manifest)
	h.Write(wasmSHA256[:])
	var d Digest
	h.Sum(d[:0])
	return d
}

// String returns "sha256:" followed by 64 lowercase hex digits.
func (d Digest) String() string { return digestPrefix + hex.EncodeToString(d[:]) }

// Short returns the first 12 hex digits, for logs and tables.
func (d Digest) Short() string { return hex.EncodeToString(d[:6]) }

// Equal compares two digests in constant time.
func (d Digest) Equal(o Digest) bool { return subtle.ConstantTimeCompare(d[:], o[:]) == 1 }

// MarshalText implements encoding.TextMarshaler.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Digest) UnmarshalText(b []byte) error {
	p, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseDigest parses the form String returns.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	hexPart, ok := strings.CutPrefix(s, digestPrefix)
	if !ok || len(hexPart) != 64 {
		return d, fmt.Errorf("signing: malformed digest %q: want sha256: and 64 hex digits", truncate(s))
	}
	if _, err := hex.Decode(d[:], []byte(hexPart)); err != nil || strings.ToLower(hexPart) != hexPart {
		return d, fmt.Errorf("signing: malformed digest %q: want lowercase hex", truncate(s))
	}
	return d, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
