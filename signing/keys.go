package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrMalformedKey is wrapped by every error about a key's encoding.
var ErrMalformedKey = errors.New("signing: malformed key")

// KeyID is a short identifier derived from a public key. It is a lookup
// hint: verification always uses the full key.
type KeyID [8]byte

const keyIDDomain = "toolhost curator key id v1\x00"

// String returns 16 lowercase hex digits.
func (id KeyID) String() string { return hex.EncodeToString(id[:]) }

// MarshalText implements encoding.TextMarshaler.
func (id KeyID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *KeyID) UnmarshalText(b []byte) error {
	p, err := ParseKeyID(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// ParseKeyID parses 16 lowercase hex digits.
func ParseKeyID(s string) (KeyID, error) {
	var id KeyID
	if len(s) != 16 || strings.ToLower(s) != s {
		return id, fmt.Errorf("%w: key ID %q: want 16 lowercase hex digits", ErrMalformedKey, truncate(s))
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("%w: key ID %q: want 16 lowercase hex digits", ErrMalformedKey, truncate(s))
	}
	return id, nil
}

// PublicKey is an ed25519 public key. The zero value is not a valid key.
type PublicKey struct{ k [ed25519.PublicKeySize]byte }

const publicKeyPrefix = "ed25519:"

// NewPublicKey checks b's length and wraps it.
func NewPublicKey(b []byte) (PublicKey, error) {
	var pk PublicKey
	if len(b) != ed25519.PublicKeySize {
		return pk, fmt.Errorf("%w: public key is %d bytes, want %d", ErrMalformedKey, len(b), ed25519.PublicKeySize)
	}
	copy(pk.k[:], b)
	if pk.IsZero() {
		return PublicKey{}, fmt.Errorf("%w: public key is all zeros", ErrMalformedKey)
	}
	if hasSmallOrder(pk.k) {
		return PublicKey{}, fmt.Errorf("%w: public key is a point of small order, which verifies signatures anyone can make; it is not a key `toolhost curator keygen` writes: ask the curator for their real .pub file", ErrMalformedKey)
	}
	return pk, nil
}

// IsZero reports whether pk is the zero value.
func (pk PublicKey) IsZero() bool { return pk.k == [ed25519.PublicKeySize]byte{} }

// ID returns the key's ID.
func (pk PublicKey) ID() KeyID {
	h := sha256.Sum256(append([]byte(keyIDDomain), pk.k[:]...))
	var id KeyID
	copy(id[:], h[:])
	return id
}

// Equal reports whether two keys are the same.
func (pk PublicKey) Equal(o PublicKey) bool { return pk.k == o.k }

// String returns "ed25519:" and the standard base64 of the key.
func (pk PublicKey) String() string {
	return publicKeyPrefix + base64.StdEncoding.EncodeToString(pk.k[:])
}

// MarshalText implements encoding.TextMarshaler.
func (pk PublicKey) MarshalText() ([]byte, error) {
	if pk.IsZero() {
		return nil, fmt.Errorf("%w: cannot encode the zero public key", ErrMalformedKey)
	}
	return []byte(pk.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (pk *PublicKey) UnmarshalText(b []byte) error {
	p, err := ParsePublicKey(string(b))
	if err != nil {
		return err
	}
	*pk = p
	return nil
}

// ParsePublicKey parses the form String returns. Only the canonical base64
// encoding is accepted.
func ParsePublicKey(s string) (PublicKey, error) {
	b64, ok := strings.CutPrefix(s, publicKeyPrefix)
	if !ok {
		return PublicKey{}, fmt.Errorf("%w: public key %q does not start with %q", ErrMalformedKey, truncate(s), publicKeyPrefix)
	}
	raw, err := decodeCanonicalBase64(b64)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: public key: %v", ErrMalformedKey, err)
	}
	return NewPublicKey(raw)
}

// PrivateKey is an ed25519 private key, kept as its 32-byte seed.
type PrivateKey struct{ seed [ed25519.SeedSize]byte }

// GenerateKey makes a new key from rand (crypto/rand.Reader when nil).
func GenerateKey(rand io.Reader) (PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return PrivateKey{}, fmt.Errorf("signing: generate key: %w", err)
	}
	var k PrivateKey
	copy(k.seed[:], priv.Seed())
	return k, nil
}

// NewPrivateKeyFromSeed wraps a 32-byte seed.
func NewPrivateKeyFromSeed(seed []byte) (PrivateKey, error) {
	var k PrivateKey
	if len(seed) != ed25519.SeedSize {
		return k, fmt.Errorf("%w: private key seed is %d bytes, want %d", ErrMalformedKey, len(seed), ed25519.SeedSize)
	}
	copy(k.seed[:], seed)
	return k, nil
}

// Seed returns a copy of the 32-byte seed. Handle it as a secret.
func (k PrivateKey) Seed() []byte { return append([]byte(nil), k.seed[:]...) }

// Public returns the matching public key.
func (k PrivateKey) Public() PublicKey {
	var pk PublicKey
	copy(pk.k[:], ed25519.NewKeyFromSeed(k.seed[:])[32:])
	return pk
}

func decodeCanonicalBase64(s string) ([]byte, error) {
	raw, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad base64: %v", err)
	}
	if base64.StdEncoding.EncodeToString(raw) != s {
		return nil, errors.New("base64 is not in canonical form")
	}
	return raw, nil
}
