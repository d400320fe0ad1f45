package curator

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/scrypt"

	"github.com/toolhost/toolhost/internal/strictjson"
	"github.com/toolhost/toolhost/signing"
)

// Errors about key files.
var (
	ErrWrongPassphrase  = errors.New("curator: wrong passphrase (or the key file was modified)")
	ErrNeedPassphrase   = errors.New("curator: the key file is encrypted: a passphrase is required")
	ErrMalformedKeyFile = errors.New("curator: malformed key file")
)

const (
	publicKeyType  = "toolhost-curator-public-key"
	privateKeyType = "toolhost-curator-private-key"
	// scrypt parameters: ~100 ms and 64 MiB on a laptop, per the scrypt paper's
	// interactive-login recommendation scaled up for a rarely used signing key.
	scryptN, scryptR, scryptP = 1 << 16, 8, 1
	maxKeyFileBytes           = 8 << 10
)

// scryptCostN is the N that MarshalPrivateKey writes. Tests lower it to the
// smallest N that ParsePrivateKey accepts, so they need not spend a full
// derivation per key file.
var scryptCostN = scryptN

var curatorNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.@-]{0,63}$`)

// ValidName reports whether name can name a curator.
func ValidName(name string) error {
	if !curatorNameRE.MatchString(name) {
		return fmt.Errorf("curator: name %q must be 1-64 of letters, digits and _ . @ -, starting with a letter or digit", name)
	}
	return nil
}

// PublicKeyFile is the content of NAME.pub.
type PublicKeyFile struct {
	Name string
	Key  signing.PublicKey
}

type publicKeyJSON struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	KeyID     string `json:"key_id"`
	PublicKey string `json:"public_key"`
}

var publicKeyShape = strictjson.Object{"type": strictjson.Any{}, "name": strictjson.Any{}, "key_id": strictjson.Any{}, "public_key": strictjson.Any{}}

// MarshalPublicKey encodes a public key file.
func MarshalPublicKey(name string, key signing.PublicKey) []byte {
	return fmt.Appendf(nil, "{\n  \"type\": %q,\n  \"name\": %q,\n  \"key_id\": %q,\n  \"public_key\": %q\n}\n",
		publicKeyType, name, key.ID().String(), key.String())
}

// ParsePublicKey parses a public key file. The key ID in the file must match
// the key.
func ParsePublicKey(data []byte) (PublicKeyFile, error) {
	if len(data) > maxKeyFileBytes {
		return PublicKeyFile{}, fmt.Errorf("%w: public key file is larger than %d bytes", ErrMalformedKeyFile, maxKeyFileBytes)
	}
	if probeType(data) == privateKeyType {
		return PublicKeyFile{}, fmt.Errorf("%w: this is a private key (.key); give the public key (.pub) instead — and keep the private key secret", ErrMalformedKeyFile)
	}
	var j publicKeyJSON
	if err := strictjson.Decode(data, publicKeyShape, &j); err != nil {
		return PublicKeyFile{}, fmt.Errorf("%w: %v; expected a .pub file written by `toolhost curator keygen`", ErrMalformedKeyFile, err)
	}
	if j.Type != publicKeyType {
		return PublicKeyFile{}, fmt.Errorf("%w: type is %q, want %q (is this a private key or another file?)", ErrMalformedKeyFile, j.Type, publicKeyType)
	}
	if err := ValidName(j.Name); err != nil {
		return PublicKeyFile{}, fmt.Errorf("%w: %v", ErrMalformedKeyFile, err)
	}
	key, err := signing.ParsePublicKey(j.PublicKey)
	if err != nil {
		return PublicKeyFile{}, fmt.Errorf("%w: %v", ErrMalformedKeyFile, err)
	}
	if key.ID().String() != j.KeyID {
		return PublicKeyFile{}, fmt.Errorf("%w: key_id %q does not match the key (its ID is %s)", ErrMalformedKeyFile, j.KeyID, key.ID())
	}
	return PublicKeyFile{Name: j.Name, Key: key}, nil
}

type privateKeyJSON struct {
	Type   string     `json:"type"`
	Name   string     `json:"name"`
	KeyID  string     `json:"key_id"`
	KDF    string     `json:"kdf"`
	Scrypt *scryptKDF `json:"scrypt,omitempty"`
	Nonce  string     `json:"nonce,omitempty"`
	Sealed string     `json:"sealed_seed,omitempty"`
	Seed   string     `json:"seed,omitempty"`
}

type scryptKDF struct {
	N    int    `json:"n"`
	R    int    `json:"r"`
	P    int    `json:"p"`
	Salt string `json:"salt"`
}

var privateKeyShape = strictjson.Object{
	"type": strictjson.Any{}, "name": strictjson.Any{}, "key_id": strictjson.Any{}, "kdf": strictjson.Any{},
	"scrypt": strictjson.Object{"n": strictjson.Any{}, "r": strictjson.Any{}, "p": strictjson.Any{}, "salt": strictjson.Any{}},
	"nonce":  strictjson.Any{}, "sealed_seed": strictjson.Any{}, "seed": strictjson.Any{},
}

// MarshalPrivateKey encodes a private key file, encrypted under passphrase
// unless passphrase is nil.
func MarshalPrivateKey(name string, key signing.PrivateKey, passphrase []byte) ([]byte, error) {
	j := privateKeyJSON{Type: privateKeyType, Name: name, KeyID: key.Public().ID().String()}
	if passphrase != nil && len(passphrase) == 0 {
		// ParsePrivateKey treats an empty passphrase as none given, so such
		// a file could never be opened again.
		return nil, errors.New("curator: empty passphrase: pass nil for an unencrypted key file")
	}
	if passphrase == nil {
		j.KDF = "none"
		j.Seed = base64.StdEncoding.EncodeToString(key.Seed())
	} else {
		salt := make([]byte, 16)
		nonce := make([]byte, chacha20poly1305.NonceSizeX)
		if _, err := rand.Read(salt); err != nil {
			return nil, err
		}
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		kdf := &scryptKDF{N: scryptCostN, R: scryptR, P: scryptP, Salt: base64.StdEncoding.EncodeToString(salt)}
		aead, err := kdf.aead(passphrase)
		if err != nil {
			return nil, err
		}
		j.KDF, j.Scrypt = "scrypt", kdf
		j.Nonce = base64.StdEncoding.EncodeToString(nonce)
		j.Sealed = base64.StdEncoding.EncodeToString(aead.Seal(nil, nonce, key.Seed(), j.aad()))
	}
	return marshalIndent(j), nil
}

// aad binds the name and key ID to the ciphertext, so they cannot be swapped.
func (j *privateKeyJSON) aad() []byte {
	return []byte(privateKeyType + "\x00" + j.Name + "\x00" + j.KeyID)
}

func (k *scryptKDF) aead(passphrase []byte) (interface {
	Seal(dst, nonce, plaintext, aad []byte) []byte
	Open(dst, nonce, ciphertext, aad []byte) ([]byte, error)
}, error) {
	salt, err := base64.StdEncoding.DecodeString(k.Salt)
	if err != nil || len(salt) < 16 {
		return nil, fmt.Errorf("%w: bad scrypt salt", ErrMalformedKeyFile)
	}
	// Bounds keep a modified file from making scrypt take gigabytes of
	// memory (128·N·r bytes; at most 256 MiB here) or minutes of time.
	if k.N < 1<<14 || k.N > 1<<20 || k.N&(k.N-1) != 0 || k.R < 1 || k.R > 32 || k.P < 1 || k.P > 16 || k.N*k.R > 1<<21 {
		return nil, fmt.Errorf("%w: scrypt parameters out of range", ErrMalformedKeyFile)
	}
	dk, err := scrypt.Key(passphrase, salt, k.N, k.R, k.P, chacha20poly1305.KeySize)
	if err != nil {
		return nil, fmt.Errorf("curator: derive key: %w", err)
	}
	return chacha20poly1305.NewX(dk)
}

// PrivateKeyFile is a decoded private key file.
type PrivateKeyFile struct {
	Name      string
	Key       signing.PrivateKey
	Encrypted bool
}

// IsEncrypted reports whether the key file needs a passphrase.
func IsEncrypted(data []byte) bool {
	var j privateKeyJSON
	return strictjson.Decode(data, privateKeyShape, &j) == nil && j.KDF == "scrypt"
}

// ParsePrivateKey decodes a private key file, decrypting it with passphrase
// when it is encrypted.
func ParsePrivateKey(data, passphrase []byte) (PrivateKeyFile, error) {
	if len(data) > maxKeyFileBytes {
		return PrivateKeyFile{}, fmt.Errorf("%w: larger than %d bytes", ErrMalformedKeyFile, maxKeyFileBytes)
	}
	if probeType(data) == publicKeyType {
		return PrivateKeyFile{}, fmt.Errorf("%w: this is a public key (did you pass the .pub file?); signing needs the private key (.key)", ErrMalformedKeyFile)
	}
	var j privateKeyJSON
	if err := strictjson.Decode(data, privateKeyShape, &j); err != nil {
		return PrivateKeyFile{}, fmt.Errorf("%w: %v; expected a .key file written by `toolhost curator keygen`", ErrMalformedKeyFile, err)
	}
	if j.Type != privateKeyType {
		return PrivateKeyFile{}, fmt.Errorf("%w: type is %q, want %q (did you pass the .pub file?)", ErrMalformedKeyFile, j.Type, privateKeyType)
	}
	if err := ValidName(j.Name); err != nil {
		return PrivateKeyFile{}, fmt.Errorf("%w: %v", ErrMalformedKeyFile, err)
	}
	var seed []byte
	var err error
	switch j.KDF {
	case "none":
		if seed, err = base64.StdEncoding.DecodeString(j.Seed); err != nil {
			return PrivateKeyFile{}, fmt.Errorf("%w: seed: %v", ErrMalformedKeyFile, err)
		}
	case "scrypt":
		if j.Scrypt == nil {
			return PrivateKeyFile{}, fmt.Errorf("%w: scrypt parameters missing", ErrMalformedKeyFile)
		}
		if len(passphrase) == 0 {
			return PrivateKeyFile{}, ErrNeedPassphrase
		}
		aead, err := j.Scrypt.aead(passphrase)
		if err != nil {
			return PrivateKeyFile{}, err
		}
		nonce, err1 := base64.StdEncoding.DecodeString(j.Nonce)
		sealed, err2 := base64.StdEncoding.DecodeString(j.Sealed)
		if err1 != nil || err2 != nil || len(nonce) != chacha20poly1305.NonceSizeX {
			return PrivateKeyFile{}, fmt.Errorf("%w: bad nonce or sealed seed", ErrMalformedKeyFile)
		}
		if seed, err = aead.Open(nil, nonce, sealed, j.aad()); err != nil {
			return PrivateKeyFile{}, ErrWrongPassphrase
		}
	default:
		return PrivateKeyFile{}, fmt.Errorf("%w: unknown kdf %q", ErrMalformedKeyFile, j.KDF)
	}
	key, err := signing.NewPrivateKeyFromSeed(seed)
	if err != nil {
		return PrivateKeyFile{}, fmt.Errorf("%w: %v", ErrMalformedKeyFile, err)
	}
	if key.Public().ID().String() != j.KeyID {
		return PrivateKeyFile{}, fmt.Errorf("%w: key_id does not match the key", ErrMalformedKeyFile)
	}
	return PrivateKeyFile{Name: j.Name, Key: key, Encrypted: j.KDF == "scrypt"}, nil
}

// probeType reads the "type" field leniently, only to give a better error
// for a key file of the wrong kind; strict parsing still decides.
func probeType(data []byte) string {
	var probe struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &probe)
	return probe.Type
}

// WriteKeyPair generates a key and writes DIR/NAME.key (0600) and
// DIR/NAME.pub (0644). It never overwrites an existing file.
func WriteKeyPair(dir, name string, passphrase []byte) (pubPath, keyPath string, key signing.PublicKey, err error) {
	if err := ValidName(name); err != nil {
		return "", "", key, err
	}
	priv, err := signing.GenerateKey(nil)
	if err != nil {
		return "", "", key, err
	}
	privBytes, err := MarshalPrivateKey(name, priv, passphrase)
	if err != nil {
		return "", "", key, err
	}
	keyPath = filepath.Join(dir, name+".key")
	pubPath = filepath.Join(dir, name+".pub")
	if err := writeNew(keyPath, privBytes, 0o600); err != nil {
		return "", "", key, err
	}
	if err := writeNew(pubPath, MarshalPublicKey(name, priv.Public()), 0o644); err != nil {
		os.Remove(keyPath)
		return "", "", key, err
	}
	return pubPath, keyPath, priv.Public(), nil
}

// writeNew writes path atomically and never over an existing file: the
// data goes to a temporary file (O_EXCL, perm) that is synced and then
// hard-linked to path, which fails if path exists. A crash leaves either
// no file or the whole one.
func writeNew(path string, data []byte, perm os.FileMode) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("curator: %s already exists; refusing to overwrite a key (choose another name or --out)", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("curator: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("curator: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("curator: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("curator: sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("curator: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("curator: %s already exists; refusing to overwrite a key (choose another name or --out)", path)
		}
		return fmt.Errorf("curator: %w", err)
	}
	return nil
}
