package signing_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/signing"
)

// exampleKey is a fixed key so the examples print the same output on every
// run. Real keys come from signing.GenerateKey.
func exampleKey() signing.PrivateKey {
	k, err := signing.NewPrivateKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		panic(err)
	}
	return k
}

func ExamplePluginDigest() {
	manifest := []byte(`{"name":"time","version":"1.0.0"}`)
	wasm := []byte("\x00asm\x01\x00\x00\x00")

	d := signing.PluginDigest(manifest, sha256.Sum256(wasm))
	fmt.Println(d)
	fmt.Println(d.Short())

	// Any change to the manifest bytes, even one that means the same JSON,
	// is a different plugin.
	d2 := signing.PluginDigest([]byte(`{"name": "time","version":"1.0.0"}`), sha256.Sum256(wasm))
	fmt.Println(d.Equal(d2))
	// Output:
	// sha256:c7d918dda896f063c7fe949575549ebc793b9f08babc0c206e36611a149f3970
	// c7d918dda896
	// false
}

func ExampleSign() {
	key := exampleKey()
	pub := key.Public()
	fmt.Println("public key:", pub)
	fmt.Println("key ID:    ", pub.ID())

	d := signing.PluginDigest([]byte(`{"name":"time"}`), sha256.Sum256([]byte("\x00asm\x01\x00\x00\x00")))
	expires := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sig := signing.Sign(key, d, expires)
	fmt.Println("signed by: ", sig.KeyID)
	fmt.Println("expires:   ", sig.Expires.Format(time.RFC3339))
	fmt.Println("signature: ", sig.EncodeSig())
	// Output:
	// public key: ed25519:6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iw=
	// key ID:     7322e0d96170b179
	// signed by:  7322e0d96170b179
	// expires:    2030-01-02T03:04:05Z
	// signature:  gVtHTeY+nuTHrgMprNc6E/NB6BSeoS+R6RKC4uAebtB2Ur8NQeijHN4b4gUYQCSybzQyAmN3RcGwHA8d3i1QCQ==
}

func ExampleVerify() {
	key := exampleKey()
	manifest := []byte(`{"name":"time"}`)
	wasmSum := sha256.Sum256([]byte("\x00asm\x01\x00\x00\x00"))
	d := signing.PluginDigest(manifest, wasmSum)
	sig := signing.Sign(key, d, time.Time{}) // never expires

	// The verifier holds the curator's public key (from NAME.pub) and
	// recomputes the digest from the bytes it is about to load.
	fmt.Println("same plugin:", signing.Verify(key.Public(), d, sig))

	tampered := signing.PluginDigest([]byte(`{"name":"evil"}`), wasmSum)
	err := signing.Verify(key.Public(), tampered, sig)
	fmt.Println("tampered:   ", errors.Is(err, signing.ErrBadSignature))

	other, _ := signing.NewPrivateKeyFromSeed(bytes.Repeat([]byte{8}, 32))
	err = signing.Verify(other.Public(), d, sig)
	fmt.Println("other key:  ", errors.Is(err, signing.ErrKeyMismatch))

	// Expiry is inside the signed message: moving it breaks the signature.
	sig.Expires = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	err = signing.Verify(key.Public(), d, sig)
	fmt.Println("new expiry: ", errors.Is(err, signing.ErrBadSignature))
	// Output:
	// same plugin: <nil>
	// tampered:    true
	// other key:   true
	// new expiry:  true
}
