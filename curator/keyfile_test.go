package curator

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/signing"
)

func seedKey(t testing.TB, b byte) signing.PrivateKey {
	t.Helper()
	k, err := signing.NewPrivateKeyFromSeed(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rewrite decodes a key file, lets f change its fields and encodes it again.
func rewrite(t *testing.T, data []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPublicKeyFile(t *testing.T) {
	key := seedKey(t, 7).Public()
	data := MarshalPublicKey("alice", key)
	// The file format is what operators exchange: pin it.
	want := `{
  "type": "toolhost-curator-public-key",
  "name": "alice",
  "key_id": "7322e0d96170b179",
  "public_key": "ed25519:6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iw="
}
`
	if string(data) != want {
		t.Errorf("MarshalPublicKey =\n%s\nwant\n%s", data, want)
	}
	got, err := ParsePublicKey(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "alice" || !got.Key.Equal(key) {
		t.Errorf("ParsePublicKey = %+v", got)
	}
	for _, name := range []string{"a", "A", "0", "alice@example.com", "ci-curator_2.x", strings.Repeat("n", 64)} {
		if got, err := ParsePublicKey(MarshalPublicKey(name, key)); err != nil || got.Name != name {
			t.Errorf("name %q: %v", name, err)
		}
	}
}

func TestParsePublicKeyRefusals(t *testing.T) {
	alice, bob := seedKey(t, 1).Public(), seedKey(t, 2).Public()
	good := MarshalPublicKey("alice", alice)
	set := func(k string, v any) []byte { return rewrite(t, good, func(m map[string]any) { m[k] = v }) }
	del := func(k string) []byte { return rewrite(t, good, func(m map[string]any) { delete(m, k) }) }
	raw := func(old, new string) []byte {
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("test bug: %q not in the key file", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	b64 := strings.TrimPrefix(alice.String(), "ed25519:")
	privFile, err := MarshalPrivateKey("alice", seedKey(t, 1), nil)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"empty", nil, "document ends early"},
		{"not JSON", []byte("ed25519:" + b64), "invalid JSON document"},
		{"array", []byte(`[]`), "must not be an array"},
		{"private key file", privFile, "this is a private key (.key)"},
		{"private key type in a public key file", set("type", privateKeyType), "this is a private key (.key)"},
		{"type missing", del("type"), `type is ""`},
		{"other type", set("type", "ssh-ed25519"), `type is "ssh-ed25519"`},
		{"key ID of another key", set("key_id", bob.ID().String()), "does not match the key"},
		{"key ID missing", del("key_id"), "does not match the key"},
		{"key ID uppercase", set("key_id", strings.ToUpper(alice.ID().String())), "does not match the key"},
		{"key of another curator", set("public_key", bob.String()), "does not match the key"},
		{"key missing", del("public_key"), "does not start with"},
		{"key without prefix", set("public_key", b64), "does not start with"},
		{"key of 31 bytes", set("public_key", "ed25519:"+base64.StdEncoding.EncodeToString(make([]byte, 31))), "public key is 31 bytes"},
		{"key of 33 bytes", set("public_key", "ed25519:"+base64.StdEncoding.EncodeToString(append(bytes.Repeat([]byte{1}, 32), 0))), "public key is 33 bytes"},
		{"key of 64 bytes", set("public_key", "ed25519:"+base64.StdEncoding.EncodeToString(make([]byte, 64))), "public key is 64 bytes"},
		{"all-zero key", set("public_key", "ed25519:"+base64.StdEncoding.EncodeToString(make([]byte, 32))), "all zeros"},
		{"key not base64", set("public_key", "ed25519:!!!!"), "bad base64"},
		{"key without padding", set("public_key", "ed25519:"+strings.TrimSuffix(b64, "=")), "bad base64"},
		{"key with a newline", set("public_key", "ed25519:"+b64[:10]+"\n"+b64[10:]), "not in canonical form"},
		{"key as number", set("public_key", 1), "public_key: got number, want a string"},
		{"name missing", del("name"), `name "" must be`},
		{"name with space", set("name", "a b"), "must be 1-64"},
		{"name with slash", set("name", "../alice"), "must be 1-64"},
		{"name too long", set("name", strings.Repeat("n", 65)), "must be 1-64"},
		{"name non-ASCII", set("name", "alïce"), "must be 1-64"},
		{"name with newline", set("name", "alice\n"), "must be 1-64"},
		{"unknown key", set("comment", "hi"), `unknown key "comment"`},
		{"case-variant key", raw(`"public_key"`, `"Public_Key"`), "keys are case-sensitive"},
		{"duplicate key", raw(`"public_key": `, `"public_key": "ed25519:`+b64+`", "public_key": `), `duplicate key "public_key"`},
		{"duplicate key ID with another value", raw(`"key_id": `, `"key_id": "`+bob.ID().String()+`", "key_id": `), `duplicate key "key_id"`},
		{"trailing data", append(bytes.Clone(good), good...), "unexpected data after the JSON value"},
		{"invalid UTF-8", raw(`"alice"`, "\"al\xffice\""), "not valid UTF-8"},
		{"too large", append(bytes.Clone(good), bytes.Repeat([]byte(" "), maxKeyFileBytes)...), "larger than 8192 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePublicKey(tt.data)
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			if !errors.Is(err, ErrMalformedKeyFile) {
				t.Errorf("error does not wrap ErrMalformedKeyFile: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if !got.Key.IsZero() || got.Name != "" {
				t.Errorf("returned a key with the error: %+v", got)
			}
		})
	}
}

func TestPrivateKeyFileUnencrypted(t *testing.T) {
	key := seedKey(t, 3)
	data, err := MarshalPrivateKey("alice", key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if IsEncrypted(data) {
		t.Error("IsEncrypted of an unencrypted file")
	}
	for _, pass := range [][]byte{nil, {}, []byte("ignored")} {
		got, err := ParsePrivateKey(data, pass)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "alice" || got.Encrypted || !got.Key.Public().Equal(key.Public()) {
			t.Errorf("ParsePrivateKey = %+v", got)
		}
	}

	other := seedKey(t, 4)
	set := func(k string, v any) []byte { return rewrite(t, data, func(m map[string]any) { m[k] = v }) }
	del := func(k string) []byte { return rewrite(t, data, func(m map[string]any) { delete(m, k) }) }
	seed := base64.StdEncoding.EncodeToString(key.Seed())
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"public key file", MarshalPublicKey("alice", key.Public()), "did you pass the .pub file?"},
		{"public key type in a private key file", set("type", publicKeyType), "did you pass the .pub file?"},
		{"key ID of another key", set("key_id", other.Public().ID().String()), "key_id does not match the key"},
		{"seed of another key", set("seed", base64.StdEncoding.EncodeToString(other.Seed())), "key_id does not match the key"},
		{"seed missing", del("seed"), "seed is 0 bytes"},
		{"seed short", set("seed", seed[:40]), "seed"},
		{"seed of 64 bytes", set("seed", base64.StdEncoding.EncodeToString(append(key.Seed(), key.Seed()...))), "seed is 64 bytes"},
		{"seed not base64", set("seed", "!!!"), "seed"},
		{"kdf missing", del("kdf"), `unknown kdf ""`},
		{"kdf unknown", set("kdf", "argon2"), `unknown kdf "argon2"`},
		{"kdf case variant value", set("kdf", "None"), `unknown kdf "None"`},
		{"name invalid", set("name", "a b"), "must be 1-64"},
		{"unknown key", set("passphrase", "x"), `unknown key "passphrase"`},
		{"case-variant key", bytes.Replace(data, []byte(`"seed"`), []byte(`"Seed"`), 1), "keys are case-sensitive"},
		{"duplicate key", bytes.Replace(data, []byte(`"seed": `), []byte(`"seed": "`+base64.StdEncoding.EncodeToString(other.Seed())+`", "seed": `), 1), `duplicate key "seed"`},
		{"trailing data", append(bytes.Clone(data), '}'), "unexpected data"},
		{"too large", append(bytes.Clone(data), bytes.Repeat([]byte("\n"), maxKeyFileBytes)...), "larger than 8192 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePrivateKey(tt.data, nil)
			if err == nil {
				t.Fatalf("accepted: %+v", got.Name)
			}
			if !errors.Is(err, ErrMalformedKeyFile) {
				t.Errorf("error does not wrap ErrMalformedKeyFile: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

// cheapScrypt makes MarshalPrivateKey use the smallest scrypt cost that
// ParsePrivateKey accepts, for the rest of the test: a derivation at the
// real cost takes about a second under the race detector.
func cheapScrypt(t *testing.T) {
	saved := scryptCostN
	scryptCostN = 1 << 14
	t.Cleanup(func() { scryptCostN = saved })
}

func TestScryptDefaults(t *testing.T) {
	// What keygen writes: N=2^16, r=8 (64 MiB), p=1, within the bounds
	// ParsePrivateKey enforces on files it reads.
	if scryptCostN != 1<<16 || scryptR != 8 || scryptP != 1 {
		t.Errorf("scrypt parameters N=%d r=%d p=%d", scryptCostN, scryptR, scryptP)
	}
	if scryptCostN*scryptR > 1<<21 || scryptCostN < 1<<14 {
		t.Error("the default parameters are outside what ParsePrivateKey accepts")
	}
}

func TestPrivateKeyFileEncrypted(t *testing.T) {
	cheapScrypt(t)
	key := seedKey(t, 5)
	pass := []byte("correct horse battery staple")
	data, err := MarshalPrivateKey("alice", key, pass)
	if err != nil {
		t.Fatal(err)
	}
	if !IsEncrypted(data) {
		t.Error("IsEncrypted is false")
	}
	var j privateKeyJSON
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if j.KDF != "scrypt" || j.Scrypt == nil || j.Scrypt.N != scryptCostN || j.Scrypt.R != scryptR || j.Scrypt.P != scryptP || j.Seed != "" {
		t.Errorf("file fields: %+v %+v", j, j.Scrypt)
	}
	if bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString(key.Seed()))) {
		t.Fatal("the seed is in the encrypted file in clear")
	}
	again, err := MarshalPrivateKey("alice", key, pass)
	if err != nil {
		t.Fatal(err)
	}
	var j2 privateKeyJSON
	json.Unmarshal(again, &j2)
	if j2.Scrypt.Salt == j.Scrypt.Salt || j2.Nonce == j.Nonce || j2.Sealed == j.Sealed {
		t.Error("two encryptions of the same key share a salt, nonce or ciphertext")
	}
	got, err := ParsePrivateKey(data, pass)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "alice" || !got.Encrypted || !got.Key.Public().Equal(key.Public()) {
		t.Errorf("ParsePrivateKey = %+v", got)
	}
	for _, p := range [][]byte{nil, {}} {
		if _, err := ParsePrivateKey(data, p); !errors.Is(err, ErrNeedPassphrase) {
			t.Errorf("no passphrase: %v, want ErrNeedPassphrase", err)
		}
	}
	if _, err := MarshalPrivateKey("alice", key, []byte{}); err == nil {
		t.Error("an empty (non-nil) passphrase made a file that could never be opened")
	}
}

func TestPrivateKeyFileTampering(t *testing.T) {
	cheapScrypt(t)
	alice, bob := seedKey(t, 5), seedKey(t, 6)
	pass := []byte("hunter2")
	good, err := MarshalPrivateKey("alice", alice, pass)
	if err != nil {
		t.Fatal(err)
	}
	bobFile, err := MarshalPrivateKey("bob", bob, pass)
	if err != nil {
		t.Fatal(err)
	}
	var bj privateKeyJSON
	json.Unmarshal(bobFile, &bj)

	flipB64 := func(field string) []byte {
		return rewrite(t, good, func(m map[string]any) {
			b, _ := base64.StdEncoding.DecodeString(m[field].(string))
			b[len(b)/2] ^= 1
			m[field] = base64.StdEncoding.EncodeToString(b)
		})
	}
	setKDF := func(k string, v any) []byte {
		return rewrite(t, good, func(m map[string]any) { m["scrypt"].(map[string]any)[k] = v })
	}

	// Each case that reaches the cipher costs one cheap derivation.
	tests := []struct {
		name string
		data []byte
		pass []byte
		want error // nil: the key opens
		text string
	}{
		{"right passphrase", good, pass, nil, ""},
		{"wrong passphrase", good, []byte("hunter3"), ErrWrongPassphrase, ""},
		{"name changed", rewrite(t, good, func(m map[string]any) { m["name"] = "mallory" }), pass, ErrWrongPassphrase, ""},
		{"name and key ID of another file", rewrite(t, good, func(m map[string]any) { m["name"], m["key_id"] = "bob", bj.KeyID }), pass, ErrWrongPassphrase, ""},
		{"sealed seed of another file", rewrite(t, good, func(m map[string]any) { m["sealed_seed"], m["nonce"] = bj.Sealed, bj.Nonce }), pass, ErrWrongPassphrase, ""},
		{"ciphertext flipped", flipB64("sealed_seed"), pass, ErrWrongPassphrase, ""},
		{"nonce flipped", flipB64("nonce"), pass, ErrWrongPassphrase, ""},
		{"salt flipped", rewrite(t, good, func(m map[string]any) {
			kdf := m["scrypt"].(map[string]any)
			b, _ := base64.StdEncoding.DecodeString(kdf["salt"].(string))
			b[0] ^= 1
			kdf["salt"] = base64.StdEncoding.EncodeToString(b)
		}), pass, ErrWrongPassphrase, ""},
		{"nonce short", rewrite(t, good, func(m map[string]any) { m["nonce"] = base64.StdEncoding.EncodeToString(make([]byte, 12)) }), pass, ErrMalformedKeyFile, "bad nonce"},

		// Refused before any derivation.
		{"scrypt parameters missing", rewrite(t, good, func(m map[string]any) { delete(m, "scrypt") }), pass, ErrMalformedKeyFile, "scrypt parameters missing"},
		{"N too small", setKDF("n", 1<<13), pass, ErrMalformedKeyFile, "out of range"},
		{"N too large", setKDF("n", 1<<21), pass, ErrMalformedKeyFile, "out of range"},
		{"N not a power of two", setKDF("n", 3<<14), pass, ErrMalformedKeyFile, "out of range"},
		{"N negative", setKDF("n", -(1 << 14)), pass, ErrMalformedKeyFile, "out of range"},
		{"N huge", setKDF("n", 1<<62), pass, ErrMalformedKeyFile, "out of range"},
		{"r zero", setKDF("r", 0), pass, ErrMalformedKeyFile, "out of range"},
		{"r too large", setKDF("r", 33), pass, ErrMalformedKeyFile, "out of range"},
		{"p zero", setKDF("p", 0), pass, ErrMalformedKeyFile, "out of range"},
		{"p too large", setKDF("p", 17), pass, ErrMalformedKeyFile, "out of range"},
		{"memory too large (N=2^20, r=8: 1 GiB)", setKDF("n", 1<<20), pass, ErrMalformedKeyFile, "out of range"},
		{"N fractional", setKDF("n", 16384.5), pass, ErrMalformedKeyFile, "scrypt.n: got number 16384.5, want a whole number"},
		{"salt short", setKDF("salt", base64.StdEncoding.EncodeToString(make([]byte, 8))), pass, ErrMalformedKeyFile, "bad scrypt salt"},
		{"salt not base64", setKDF("salt", "***"), pass, ErrMalformedKeyFile, "bad scrypt salt"},
		{"unknown scrypt key", setKDF("maxmem", 1), pass, ErrMalformedKeyFile, `unknown key "maxmem"`},
		{"case-variant scrypt key", bytes.Replace(good, []byte(`"n":`), []byte(`"N":`), 1), pass, ErrMalformedKeyFile, "case-sensitive"},
		{"public key file", MarshalPublicKey("alice", alice.Public()), pass, ErrMalformedKeyFile, "did you pass the .pub file?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePrivateKey(tt.data, tt.pass)
			if tt.want == nil {
				if err != nil || !got.Key.Public().Equal(alice.Public()) || !got.Encrypted {
					t.Fatalf("ParsePrivateKey = %+v, %v", got, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParsePrivateKey = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q does not contain %q", err, tt.text)
			}
			if !got.Key.Public().Equal(signing.PrivateKey{}.Public()) || got.Name != "" {
				t.Error("returned a key with the error")
			}
		})
	}
}

func TestWriteKeyPair(t *testing.T) {
	dir := t.TempDir()
	pubPath, keyPath, pub, err := WriteKeyPair(dir, "ci-curator", nil)
	if err != nil {
		t.Fatal(err)
	}
	if pubPath != filepath.Join(dir, "ci-curator.pub") || keyPath != filepath.Join(dir, "ci-curator.key") {
		t.Errorf("paths %s %s", pubPath, keyPath)
	}
	for path, mode := range map[string]os.FileMode{keyPath: 0o600, pubPath: 0o644} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&^mode != 0 {
			t.Errorf("%s has mode %v, want at most %v", path, fi.Mode().Perm(), mode)
		}
	}
	pubData, _ := os.ReadFile(pubPath)
	keyData, _ := os.ReadFile(keyPath)
	pf, err := ParsePublicKey(pubData)
	if err != nil || !pf.Key.Equal(pub) || pf.Name != "ci-curator" {
		t.Fatalf("public key file: %+v, %v", pf, err)
	}
	kf, err := ParsePrivateKey(keyData, nil)
	if err != nil || !kf.Key.Public().Equal(pub) {
		t.Fatalf("private key file: %v", err)
	}

	// Never overwrite a key.
	if _, _, _, err := WriteKeyPair(dir, "ci-curator", nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second WriteKeyPair = %v", err)
	}
	if after, _ := os.ReadFile(keyPath); !bytes.Equal(after, keyData) {
		t.Error("the existing key was changed")
	}
	// A .pub in the way leaves no orphan .key behind.
	os.WriteFile(filepath.Join(dir, "bob.pub"), []byte("x"), 0o644)
	if _, _, _, err := WriteKeyPair(dir, "bob", nil); err == nil {
		t.Error("WriteKeyPair overwrote bob.pub")
	}
	if _, err := os.Stat(filepath.Join(dir, "bob.key")); !os.IsNotExist(err) {
		t.Errorf("bob.key left behind: %v", err)
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden", "-x", strings.Repeat("a", 65)} {
		if _, _, _, err := WriteKeyPair(dir, bad, nil); err == nil {
			t.Errorf("WriteKeyPair(%q) succeeded", bad)
		}
	}
	if _, _, _, err := WriteKeyPair(filepath.Join(dir, "missing"), "x", nil); err == nil {
		t.Error("WriteKeyPair into a missing directory succeeded")
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "Z", "9", "alice", "alice@example.com", "a.b-c_d", strings.Repeat("x", 64)} {
		if err := ValidName(ok); err != nil {
			t.Errorf("ValidName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".a", "_a", "@a", "a b", "a/b", "a\\b", "a\x00", "ä", strings.Repeat("x", 65)} {
		if err := ValidName(bad); err == nil {
			t.Errorf("ValidName(%q) accepted", bad)
		}
	}
}
