package curator

import (
	"errors"
	"testing"
	"time"

	"github.com/toolhost/toolhost/signing"
)

// FuzzParsePublicKeyFile: never panics; an accepted file names a valid
// curator and a key whose ID it states, and writing it again reads back the
// same.
func FuzzParsePublicKeyFile(f *testing.F) {
	f.Add(MarshalPublicKey("alice", seedKey(f, 1).Public()))
	f.Add([]byte(`{"type":"toolhost-curator-public-key","name":"a","key_id":"","public_key":"ed25519:"}`))
	f.Add([]byte(`{"type":"toolhost-curator-public-key","Type":"x"}`))
	priv, _ := MarshalPrivateKey("alice", seedKey(f, 1), nil)
	f.Add(priv)
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ParsePublicKey(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedKeyFile) {
				t.Fatalf("error does not wrap ErrMalformedKeyFile: %v", err)
			}
			return
		}
		if pf.Key.IsZero() || ValidName(pf.Name) != nil {
			t.Fatalf("accepted %+v", pf)
		}
		again, err := ParsePublicKey(MarshalPublicKey(pf.Name, pf.Key))
		if err != nil || again != pf {
			t.Fatalf("re-encoding does not read back: %+v, %v", again, err)
		}
	})
}

// FuzzParsePrivateKeyFile covers the parsing without a passphrase, so no
// input costs a key derivation: never panics, and an accepted key matches
// the key ID in its file.
func FuzzParsePrivateKeyFile(f *testing.F) {
	plain, _ := MarshalPrivateKey("alice", seedKey(f, 1), nil)
	f.Add(plain)
	f.Add(MarshalPublicKey("alice", seedKey(f, 1).Public()))
	f.Add([]byte(`{"type":"toolhost-curator-private-key","name":"a","key_id":"","kdf":"scrypt","scrypt":{"n":16384,"r":8,"p":1,"salt":"AAAAAAAAAAAAAAAAAAAAAA=="},"nonce":"","sealed_seed":""}`))
	f.Add([]byte(`{"type":"toolhost-curator-private-key","kdf":"none","seed":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		kf, err := ParsePrivateKey(data, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformedKeyFile) && !errors.Is(err, ErrNeedPassphrase) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if errors.Is(err, ErrNeedPassphrase) && !IsEncrypted(data) {
				t.Fatalf("IsEncrypted = %v, but ParsePrivateKey says %v", IsEncrypted(data), err)
			}
			return
		}
		if kf.Encrypted || IsEncrypted(data) || ValidName(kf.Name) != nil {
			t.Fatalf("accepted %q as %+v without a passphrase", data, kf.Name)
		}
		again, err := MarshalPrivateKey(kf.Name, kf.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		kf2, err := ParsePrivateKey(again, nil)
		if err != nil || kf2.Name != kf.Name || !kf2.Key.Public().Equal(kf.Key.Public()) {
			t.Fatalf("re-encoding does not read back: %v", err)
		}
		// The key signs, and the signature verifies under its public key.
		d := signing.PluginDigest(data, [32]byte{})
		if err := signing.Verify(kf.Key.Public(), d, signing.Sign(kf.Key, d, time.Time{})); err != nil {
			t.Fatal(err)
		}
	})
}
