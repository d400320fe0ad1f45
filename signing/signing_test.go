package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func testKey(t testing.TB, b byte) PrivateKey {
	t.Helper()
	k, err := NewPrivateKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testDigest(manifest string) Digest {
	return PluginDigest([]byte(manifest), sha256.Sum256([]byte("\x00asm\x01\x00\x00\x00")))
}

func TestPluginDigest(t *testing.T) {
	wasm := sha256.Sum256([]byte("\x00asm\x01\x00\x00\x00"))
	base := PluginDigest([]byte(`{"name":"a"}`), wasm)
	if base != PluginDigest([]byte(`{"name":"a"}`), wasm) {
		t.Fatal("PluginDigest is not deterministic")
	}
	otherWasm := wasm
	otherWasm[31] ^= 1
	for name, d := range map[string]Digest{
		"manifest byte":        PluginDigest([]byte(`{"name":"b"}`), wasm),
		"manifest whitespace":  PluginDigest([]byte(`{"name": "a"}`), wasm),
		"manifest trailing NL": PluginDigest([]byte("{\"name\":\"a\"}\n"), wasm),
		"wasm hash":            PluginDigest([]byte(`{"name":"a"}`), otherWasm),
		"empty manifest":       PluginDigest(nil, wasm),
	} {
		if d == base || d.Equal(base) {
			t.Errorf("%s: a change did not change the digest", name)
		}
	}
	// The manifest length is framed: bytes cannot move between the
	// manifest and what follows it.
	var zero [32]byte
	a := PluginDigest([]byte("x"), zero)
	b := PluginDigest(append([]byte("x"), zero[:1]...), [32]byte(append(zero[1:], 0)))
	if a == b {
		t.Error("moving a byte from the wasm hash into the manifest kept the digest")
	}
}

func TestDigestText(t *testing.T) {
	d := testDigest(`{}`)
	s := d.String()
	if !strings.HasPrefix(s, "sha256:") || len(s) != len("sha256:")+64 {
		t.Fatalf("String() = %q", s)
	}
	if d.Short() != s[7:19] {
		t.Errorf("Short() = %q, want %q", d.Short(), s[7:19])
	}
	got, err := ParseDigest(s)
	if err != nil || got != d {
		t.Fatalf("ParseDigest(%q) = %v, %v", s, got, err)
	}
	text, _ := d.MarshalText()
	var back Digest
	if err := back.UnmarshalText(text); err != nil || back != d {
		t.Fatalf("UnmarshalText(%q) = %v, %v", text, back, err)
	}
	hexPart := s[7:]
	for _, bad := range []string{
		"",
		hexPart,                              // prefix missing
		"SHA256:" + hexPart,                  // prefix in the wrong case
		"sha512:" + hexPart,                  // another algorithm
		"sha256:" + strings.ToUpper(hexPart), // uppercase hex
		"sha256:" + hexPart[:63],             // short
		"sha256:" + hexPart + "0",            // long
		"sha256:" + hexPart[:62] + "zz",      // not hex
		" sha256:" + hexPart,                 // leading space
		"sha256:" + hexPart + "\n",           // trailing newline
		"sha256: " + hexPart[1:],             // space inside
		"sha256:" + strings.Repeat("0", 10000),
	} {
		if _, err := ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) accepted", bad)
		}
		var d Digest
		if err := d.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted", bad)
		}
	}
	// Errors quote the input, but not without bound.
	_, err = ParseDigest(strings.Repeat("x", 10000))
	if err == nil || len(err.Error()) > 300 {
		t.Errorf("error for a long input: %v", err)
	}
}

func TestKeyIDText(t *testing.T) {
	id := testKey(t, 1).Public().ID()
	s := id.String()
	if len(s) != 16 || strings.ToLower(s) != s {
		t.Fatalf("KeyID.String() = %q", s)
	}
	got, err := ParseKeyID(s)
	if err != nil || got != id {
		t.Fatalf("ParseKeyID(%q) = %v, %v", s, got, err)
	}
	var back KeyID
	text, _ := id.MarshalText()
	if err := back.UnmarshalText(text); err != nil || back != id {
		t.Fatalf("UnmarshalText: %v, %v", back, err)
	}
	for _, bad := range []string{"", s[:15], s + "0", strings.ToUpper(s), s[:14] + "zz", s[:15] + " ", "0x" + s[:14]} {
		if _, err := ParseKeyID(bad); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("ParseKeyID(%q) = %v, want ErrMalformedKey", bad, err)
		}
	}
	// The ID is a hash of the key under a domain: pin it, it is stored in
	// key files and trust stores.
	if got, want := testKey(t, 7).Public().ID().String(), "7322e0d96170b179"; got != want {
		t.Errorf("ID of the seed-7 key = %s, want %s", got, want)
	}
}

func TestPublicKeyText(t *testing.T) {
	pub := testKey(t, 1).Public()
	s := pub.String()
	if !strings.HasPrefix(s, "ed25519:") {
		t.Fatalf("String() = %q", s)
	}
	got, err := ParsePublicKey(s)
	if err != nil || !got.Equal(pub) {
		t.Fatalf("ParsePublicKey(%q) = %v, %v", s, got, err)
	}
	if got.ID() != pub.ID() {
		t.Error("ID changed over a round trip")
	}

	// Through encoding/json, which uses the text methods.
	type holder struct {
		Key PublicKey `json:"key"`
		ID  KeyID     `json:"id"`
		D   Digest    `json:"d"`
	}
	in := holder{Key: pub, ID: pub.ID(), D: testDigest("x")}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out holder
	if err := json.Unmarshal(js, &out); err != nil || out != in {
		t.Fatalf("JSON round trip: %s -> %+v, %v", js, out, err)
	}
	if err := json.Unmarshal([]byte(`{"key":"ed25519:AAAA"}`), &out); !errors.Is(err, ErrMalformedKey) {
		t.Errorf("JSON with a short key: %v", err)
	}

	b64 := s[len("ed25519:"):]
	raw, _ := base64.StdEncoding.DecodeString(b64)
	// The last base64 digit before "=" carries 4 data bits and 2 padding
	// bits; setting a padding bit gives a non-canonical encoding of the same
	// bytes under a lax decoder.
	last := strings.IndexByte(base64Alphabet, b64[42])
	paddingBitSet := b64[:42] + string(base64Alphabet[last|1]) + "="
	for _, tt := range []struct {
		name, in string
	}{
		{"empty", ""},
		{"prefix only", "ed25519:"},
		{"prefix missing", b64},
		{"prefix in another case", "Ed25519:" + b64},
		{"other algorithm", "ed448:" + b64},
		{"padding missing", "ed25519:" + b64[:43]},
		{"padding bits set", "ed25519:" + paddingBitSet},
		{"URL alphabet", "ed25519:" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))},
		{"newline inside", "ed25519:" + b64[:20] + "\n" + b64[20:]},
		{"CR LF at the end", "ed25519:" + b64 + "\r\n"},
		{"space inside", "ed25519:" + b64[:20] + " " + b64[20:]},
		{"trailing space", s + " "},
		{"31 bytes", "ed25519:" + base64.StdEncoding.EncodeToString(raw[:31])},
		{"33 bytes", "ed25519:" + base64.StdEncoding.EncodeToString(append(raw, 0))},
		{"64 bytes (a private key)", "ed25519:" + base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)))},
		{"all zeros", "ed25519:" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{"hex instead of base64", "ed25519:" + strings.Repeat("ab", 32)},
		{"huge", "ed25519:" + strings.Repeat("A", 1<<20)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePublicKey(tt.in)
			if !errors.Is(err, ErrMalformedKey) {
				t.Fatalf("ParsePublicKey(%.60q) = %v, want ErrMalformedKey", tt.in, err)
			}
			if len(err.Error()) > 300 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
			var pk PublicKey
			if err := pk.UnmarshalText([]byte(tt.in)); err == nil || !pk.IsZero() {
				t.Errorf("UnmarshalText accepted or changed the key: %v", err)
			}
		})
	}
	if _, err := base64.StdEncoding.DecodeString(paddingBitSet); err != nil {
		t.Fatalf("test bug: the padding-bit variant %q should decode laxly: %v", paddingBitSet, err)
	}
}

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func TestNewPublicKey(t *testing.T) {
	for _, n := range []int{0, 1, 31, 33, 64} {
		if _, err := NewPublicKey(make([]byte, n)); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("NewPublicKey(%d bytes) = %v, want ErrMalformedKey", n, err)
		}
	}
	if _, err := NewPublicKey(make([]byte, 32)); !errors.Is(err, ErrMalformedKey) {
		t.Error("the all-zero key was accepted")
	}
	var zero PublicKey
	if !zero.IsZero() {
		t.Error("zero value is not IsZero")
	}
	if _, err := zero.MarshalText(); !errors.Is(err, ErrMalformedKey) {
		t.Errorf("MarshalText of the zero key = %v", err)
	}
	raw := bytes.Repeat([]byte{9}, 32)
	pk, err := NewPublicKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	raw[0] = 0 // the key must not alias the caller's slice
	if pk.k[0] != 9 {
		t.Error("NewPublicKey kept a reference to its argument")
	}
}

func TestPrivateKey(t *testing.T) {
	seed := bytes.Repeat([]byte{3}, 32)
	k, err := NewPrivateKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	want := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	if pub := k.Public(); !bytes.Equal(pub.k[:], want) {
		t.Error("Public() does not match crypto/ed25519")
	}
	s := k.Seed()
	if !bytes.Equal(s, seed) {
		t.Error("Seed() differs")
	}
	s[0] ^= 0xff
	if !bytes.Equal(k.Seed(), seed) {
		t.Error("Seed() returned the key's own storage")
	}
	for _, n := range []int{0, 31, 33, 64} {
		if _, err := NewPrivateKeyFromSeed(make([]byte, n)); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("NewPrivateKeyFromSeed(%d bytes) = %v", n, err)
		}
	}

	g1, err := GenerateKey(bytes.NewReader(seed))
	if err != nil {
		t.Fatal(err)
	}
	if !g1.Public().Equal(k.Public()) {
		t.Error("GenerateKey from a fixed reader is not the key of that seed")
	}
	if _, err := GenerateKey(bytes.NewReader(seed[:10])); err == nil {
		t.Error("GenerateKey with a short reader succeeded")
	}
	a, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateKey(nil)
	if a.Public().Equal(b.Public()) {
		t.Error("two generated keys are equal")
	}
}

// TestSignedMessage pins the exact bytes a curator signs: changing them
// silently invalidates every signature ever made.
func TestSignedMessage(t *testing.T) {
	d := testDigest(`{}`)
	got := string(signedMessage(PayloadType, d, time.Time{}))
	body := "digest " + d.String() + "\nexpires never\n"
	want := "DSSEv1 41 application/vnd.toolhost.plugin-digest.v1 " + "93 " + body
	if len(body) != 93 {
		t.Fatalf("test bug: body is %d bytes", len(body))
	}
	if got != want {
		t.Errorf("signedMessage =\n%q\nwant\n%q", got, want)
	}
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	got = string(signedMessage(PayloadType, d, exp))
	if !strings.HasSuffix(got, "\nexpires 1893553445\n") {
		t.Errorf("signedMessage with expiry = %q", got)
	}
}

func TestSignVerify(t *testing.T) {
	k := testKey(t, 1)
	pub := k.Public()
	d := testDigest(`{"name":"a"}`)
	exp := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, expires := range []time.Time{{}, exp} {
		s := Sign(k, d, expires)
		if s.KeyID != pub.ID() {
			t.Errorf("KeyID = %s, want %s", s.KeyID, pub.ID())
		}
		if err := Verify(pub, d, s); err != nil {
			t.Fatalf("Verify(expires %v) = %v", expires, err)
		}
		// ed25519 is deterministic.
		if s2 := Sign(k, d, expires); s2 != s {
			t.Error("signing twice gave different signatures")
		}
	}

	// Expiry is normalized to whole seconds in UTC, and what is signed
	// is the instant, not its representation.
	paris := time.FixedZone("CET", 3600)
	s := Sign(k, d, exp.In(paris).Add(999*time.Millisecond))
	if !s.Expires.Equal(exp) || s.Expires.Location() != time.UTC {
		t.Errorf("Expires = %v, want %v", s.Expires, exp)
	}
	s.Expires = exp.In(paris)
	if err := Verify(pub, d, s); err != nil {
		t.Errorf("the same instant in another zone does not verify: %v", err)
	}
}

func TestVerifyRefusals(t *testing.T) {
	k, other := testKey(t, 1), testKey(t, 2)
	d := testDigest(`{"name":"a"}`)
	exp := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	good := Sign(k, d, exp)

	// A signature made with the same key over the same digest, but as
	// another document type (built by hand with this package's encoding).
	otherType := good
	copy(otherType.Sig[:], ed25519.Sign(ed25519.NewKeyFromSeed(k.Seed()), signedMessage("application/vnd.toolhost.revocation.v1", d, exp)))
	// And one over the bare digest bytes, with no domain separation.
	bare := good
	copy(bare.Sig[:], ed25519.Sign(ed25519.NewKeyFromSeed(k.Seed()), d[:]))

	tests := []struct {
		name string
		pub  PublicKey
		d    Digest
		sig  func() Signature
		want error
	}{
		{"different digest", k.Public(), testDigest(`{"name":"b"}`), func() Signature { return good }, ErrBadSignature},
		{"expiry later", k.Public(), d, func() Signature { s := good; s.Expires = exp.Add(time.Second); return s }, ErrBadSignature},
		{"expiry earlier", k.Public(), d, func() Signature { s := good; s.Expires = exp.Add(-time.Hour); return s }, ErrBadSignature},
		{"expiry removed", k.Public(), d, func() Signature { s := good; s.Expires = time.Time{}; return s }, ErrBadSignature},
		{"expiry added", k.Public(), d, func() Signature { s := Sign(k, d, time.Time{}); s.Expires = exp; return s }, ErrBadSignature},
		{"other payload type", k.Public(), d, func() Signature { return otherType }, ErrBadSignature},
		{"bare digest signed", k.Public(), d, func() Signature { return bare }, ErrBadSignature},
		{"other key", other.Public(), d, func() Signature { return good }, ErrKeyMismatch},
		{"other key named by the signature", other.Public(), d, func() Signature { s := good; s.KeyID = other.Public().ID(); return s }, ErrBadSignature},
		{"signature by other key naming ours", k.Public(), d, func() Signature { s := Sign(other, d, exp); s.KeyID = k.Public().ID(); return s }, ErrBadSignature},
		{"zero key", PublicKey{}, d, func() Signature { return good }, ErrMalformedKey},
		{"zero signature", k.Public(), d, func() Signature { s := good; s.Sig = [64]byte{}; return s }, ErrBadSignature},
		{"S not reduced (S+L)", k.Public(), d, func() Signature { return withSPlusL(good) }, ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.pub, tt.d, tt.sig())
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("every byte of the signature", func(t *testing.T) {
		for i := range good.Sig {
			s := good
			s.Sig[i] ^= 0x01
			if err := Verify(k.Public(), d, s); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("flipping bit 0 of byte %d: Verify = %v", i, err)
			}
		}
	})
}

// withSPlusL returns s with its scalar S replaced by S+L, the classic
// malleability: the same point equation holds, and a lax verifier accepts it.
func withSPlusL(s Signature) Signature {
	// L = 2^252 + 27742317777372353535851937790883648493, little-endian.
	l := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}
	var carry uint16
	for i := 0; i < 32; i++ {
		v := uint16(s.Sig[32+i]) + uint16(l[i]) + carry
		s.Sig[32+i], carry = byte(v), v>>8
	}
	return s
}

func TestVerifyRaw(t *testing.T) {
	k := testKey(t, 1)
	msg := []byte("m")
	sig := ed25519.Sign(ed25519.NewKeyFromSeed(k.Seed()), msg)
	if !verifyRaw(k.Public(), msg, sig) {
		t.Fatal("a good signature does not verify")
	}
	for _, bad := range [][]byte{nil, sig[:63], append(append([]byte(nil), sig...), 0)} {
		if verifyRaw(k.Public(), msg, bad) {
			t.Errorf("a %d-byte signature verified", len(bad))
		}
	}
	if verifyRaw(PublicKey{}, msg, sig) {
		t.Error("the zero key verified")
	}
}

func TestSignatureText(t *testing.T) {
	s := Sign(testKey(t, 1), testDigest("x"), time.Time{})
	enc := s.EncodeSig()
	got, err := DecodeSig(enc)
	if err != nil || got != s.Sig {
		t.Fatalf("DecodeSig(%q) = %x, %v", enc, got, err)
	}
	// 64 bytes: 86 digits and "=="; the last digit has 4 padding bits.
	last := strings.IndexByte(base64Alphabet, enc[85])
	paddingBitSet := enc[:85] + string(base64Alphabet[last^1]) + "=="
	for _, bad := range []string{
		"",
		enc[:86],        // padding missing
		enc[:84] + "==", // 63 bytes
		paddingBitSet,   // non-canonical
		enc[:40] + "\n" + enc[40:],
		enc + " ",
		base64.StdEncoding.EncodeToString(make([]byte, 65)),
		base64.StdEncoding.EncodeToString(make([]byte, 32)),
		base64.RawURLEncoding.EncodeToString(s.Sig[:]),
		"ed25519:" + enc,
		strings.Repeat("A", 1<<16),
	} {
		if _, err := DecodeSig(bad); !errors.Is(err, ErrMalformedSignature) {
			t.Errorf("DecodeSig(%.40q) = %v, want ErrMalformedSignature", bad, err)
		}
	}
}
