package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
)

// TestSmallOrderKeysAreRefused: a public key of small order accepts a
// signature nobody made (R = the identity, S = 0) for every message (the
// identity) or one in eight (order 8); such a key, trusted, would let anyone
// sign plugins. Every encoding on which that forgery verifies, with either
// sign bit, is refused, and real keys are not.
func TestSmallOrderKeysAreRefused(t *testing.T) {
	var forged [ed25519.SignatureSize]byte
	forged[0] = 1 // R = the identity, S = 0
	forges := func(k [32]byte) bool {
		for i := range 64 {
			if ed25519.Verify(k[:], fmt.Appendf(nil, "message %d", i), forged[:]) {
				return true
			}
		}
		return false
	}
	identity := [32]byte{1}
	if !forges(identity) {
		t.Fatal("the forgery does not verify under the identity key: the test is void")
	}
	for _, w := range smallOrder {
		for _, sign := range []byte{0, 0x80} {
			k := w
			k[31] |= sign
			if _, err := NewPublicKey(k[:]); !errors.Is(err, ErrMalformedKey) {
				t.Errorf("small-order key %x accepted (forgery verifies: %v)", k, forges(k))
			}
		}
	}
	for range 200 {
		priv, err := GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pub := priv.Public()
		if _, err := NewPublicKey(pub.k[:]); err != nil {
			t.Fatalf("a generated key was refused: %v", err)
		}
		if forges(pub.k) {
			t.Fatalf("the forgery verifies under a generated key %x", pub.k)
		}
	}
	// Parsed from a .pub file's text form, the same refusal.
	if _, err := ParsePublicKey(PublicKey{k: identity}.String()); !errors.Is(err, ErrMalformedKey) {
		t.Errorf("ParsePublicKey of the identity = %v", err)
	}
}
