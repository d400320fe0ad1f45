package signing

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"
)

// FuzzParsePublicKey feeds arbitrary text to every text form this package
// parses. None may panic, each error wraps the package's sentinel, and
// whatever parses is canonical: it prints back as exactly the input.
func FuzzParsePublicKey(f *testing.F) {
	k := PrivateKey{}
	pub := k.Public()
	sig := Sign(k, testDigest("x"), time.Time{})
	for _, s := range []string{
		pub.String(), pub.ID().String(), testDigest("x").String(), sig.EncodeSig(),
		"ed25519:", "ed25519:AAAA", "ed25519:" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"sha256:", "0123456789abcdef", "0123456789ABCDEF", "==", "ed25519:" + pub.String()[8:51] + "\n=",
	} {
		f.Add(s)
	}
	d := testDigest("fuzz")
	f.Fuzz(func(t *testing.T, s string) {
		if pk, err := ParsePublicKey(s); err == nil {
			if pk.IsZero() {
				t.Fatalf("parsed the zero key from %q", s)
			}
			if pk.String() != s {
				t.Fatalf("ParsePublicKey(%q) accepted a non-canonical form of %q", s, pk.String())
			}
			// A parsed key is safe to verify with, whatever the signature.
			var sig Signature
			copy(sig.Sig[:], s)
			sig.KeyID = pk.ID()
			if err := Verify(pk, d, sig); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("Verify with a fuzzed signature = %v", err)
			}
		} else if !errors.Is(err, ErrMalformedKey) {
			t.Fatalf("ParsePublicKey error %v does not wrap ErrMalformedKey", err)
		}

		if id, err := ParseKeyID(s); err == nil && id.String() != s {
			t.Fatalf("ParseKeyID(%q) accepted a non-canonical form of %q", s, id)
		} else if err != nil && !errors.Is(err, ErrMalformedKey) {
			t.Fatalf("ParseKeyID error %v does not wrap ErrMalformedKey", err)
		}

		if d, err := ParseDigest(s); err == nil && d.String() != s {
			t.Fatalf("ParseDigest(%q) accepted a non-canonical form of %q", s, d)
		}

		if raw, err := DecodeSig(s); err == nil {
			if base64.StdEncoding.EncodeToString(raw[:]) != s {
				t.Fatalf("DecodeSig(%q) accepted a non-canonical encoding", s)
			}
		} else if !errors.Is(err, ErrMalformedSignature) {
			t.Fatalf("DecodeSig error %v does not wrap ErrMalformedSignature", err)
		}
	})
}
