package signing

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Errors of Verify. A signature is either valid or refused with one of these.
var (
	ErrMalformedSignature = errors.New("signing: malformed signature")
	ErrKeyMismatch        = errors.New("signing: signature was made by a different key")
	ErrBadSignature       = errors.New("signing: signature does not verify")
)

// PayloadType names what a plugin signature is over. It is part of every
// signed message, so a signature over another document type never verifies.
const PayloadType = "application/vnd.toolhost.plugin-digest.v1"

// Signature is one curator's signature over a plugin digest.
type Signature struct {
	KeyID KeyID
	// Expires is when the signature stops counting; the zero time means never.
	// It is inside the signed message.
	Expires time.Time
	Sig     [ed25519.SignatureSize]byte
}

// Sign signs digest d with k. A non-zero expires is truncated to seconds.
func Sign(k PrivateKey, d Digest, expires time.Time) Signature {
	if !expires.IsZero() {
		expires = expires.UTC().Truncate(time.Second)
	}
	priv := ed25519.NewKeyFromSeed(k.seed[:])
	s := Signature{KeyID: k.Public().ID(), Expires: expires}
	copy(s.Sig[:], ed25519.Sign(priv, signedMessage(PayloadType, d, expires)))
	return s
}

// Verify checks that pub made s over d. It does not look at expiry or
// trust: that is policy, decided by the caller.
func Verify(pub PublicKey, d Digest, s Signature) error {
	if pub.IsZero() {
		return fmt.Errorf("%w: zero public key", ErrMalformedKey)
	}
	if pub.ID() != s.KeyID {
		return fmt.Errorf("%w: signature names key %s, key given is %s", ErrKeyMismatch, s.KeyID, pub.ID())
	}
	if !verifyRaw(pub, signedMessage(PayloadType, d, s.Expires), s.Sig[:]) {
		return ErrBadSignature
	}
	return nil
}

// verifyRaw is the single place an ed25519 signature is checked. It checks
// lengths first: ed25519.Verify panics on a short key.
func verifyRaw(pub PublicKey, msg, sig []byte) bool {
	if pub.IsZero() || len(sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(pub.k[:], msg, sig)
}

// signedMessage is DSSE's pre-authentication encoding of the payload type
// and a body naming the digest and the expiry:
//
//	"DSSEv1" SP len(type) SP type SP len(body) SP body
func signedMessage(payloadType string, d Digest, expires time.Time) []byte {
	body := "digest " + d.String() + "\nexpires "
	if expires.IsZero() {
		body += "never"
	} else {
		body += strconv.FormatInt(expires.Unix(), 10)
	}
	body += "\n"
	return fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(body), body)
}

// EncodeSig returns the standard base64 of the raw signature bytes.
func (s Signature) EncodeSig() string { return base64.StdEncoding.EncodeToString(s.Sig[:]) }

// DecodeSig parses the raw signature bytes from canonical standard base64.
func DecodeSig(s string) ([ed25519.SignatureSize]byte, error) {
	var out [ed25519.SignatureSize]byte
	raw, err := decodeCanonicalBase64(s)
	if err != nil {
		return out, fmt.Errorf("%w: %v", ErrMalformedSignature, err)
	}
	if len(raw) != ed25519.SignatureSize {
		return out, fmt.Errorf("%w: %d bytes, want %d", ErrMalformedSignature, len(raw), ed25519.SignatureSize)
	}
	copy(out[:], raw)
	return out, nil
}
