package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"golang.org/x/crypto/chacha20poly1305"

	"github.com/toolhost/toolhost/plugin"
)

// Plugin configuration and secrets. Both are sealed like the rest of the
// security state (authenticatedPrefixes): a value changed outside toolhost
// fails closed. Secret values are also encrypted at rest with
// XChaCha20-Poly1305 under a key of their own, SecretsKeyName next to the
// store directory (0600, created on the first secret), bound by the
// additional data to their plugin and name so a value cannot be moved to
// another plugin or secret. Nothing here logs a value.
const (
	configPrefix = "config/"
	secretPrefix = "secret/"

	// SecretsKeyName is the file, in the directory that holds the store
	// directory (the toolhost home), of the key that encrypts secrets.
	SecretsKeyName   = "secrets.key"
	secretsKeyHeader = "toolhost-secrets-key-v1\n"
	secretAADDomain  = "toolhost secret v1\x00"
)

// ErrSecretsKey means the secrets cannot be decrypted with the key file.
var ErrSecretsKey = errors.New("store: the secrets cannot be decrypted")

type sealedSecret struct {
	Nonce      []byte `json:"nonce"`
	Ciphertext []byte `json:"ciphertext"`
}

// Config returns the configuration values set for plugin (empty if none).
func (s *Store) Config(pluginName string) (map[string]string, error) {
	out := map[string]string{}
	err := s.viewSealed(func(txn *badger.Txn) error {
		err := getJSON(txn, configPrefix+pluginName, &out)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	})
	return out, err
}

// SetConfig replaces the configuration values of plugin; an empty map
// removes them. Its journal entry names the keys set or changed and the
// keys removed, never a value (values can be addresses or account names
// an operator would not put in a log; the audit log names keys only too).
func (s *Store) SetConfig(pluginName string, values map[string]string) error {
	val, err := json.Marshal(values)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	err = s.update(2*len(val)+256, func(txn *badger.Txn) error {
		old := map[string]string{}
		oerr := getJSON(txn, configPrefix+pluginName, &old)
		if oerr != nil && !errors.Is(oerr, ErrNotFound) {
			old = nil // unreadable: replaced, as before the journal
		}
		var werr error
		if len(values) == 0 {
			werr = txn.Delete([]byte(configPrefix + pluginName))
		} else {
			werr = txn.Set([]byte(configPrefix+pluginName), val)
		}
		if werr != nil {
			return werr
		}
		return journal(txn, JournalEntry{Action: "config_set", Subject: pluginName, Description: configChange(pluginName, old, values)})
	})
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// configChange describes a config change by key names: those set to a new
// value and those removed. old is nil when the previous values could not
// be read.
func configChange(pluginName string, old, values map[string]string) string {
	var set, unset []string
	for k, v := range values {
		if ov, ok := old[k]; !ok || ov != v {
			set = append(set, k)
		}
	}
	for k := range old {
		if _, ok := values[k]; !ok {
			unset = append(unset, k)
		}
	}
	sort.Strings(set)
	sort.Strings(unset)
	d := "config_set " + pluginName
	if len(set) > 0 {
		d += " set " + strings.Join(set, ", ")
	}
	if len(unset) > 0 {
		d += "; unset " + strings.Join(unset, ", ")
	}
	if len(set)+len(unset) == 0 {
		d += " (no value changed)"
	}
	if old == nil {
		d += " (the previous values could not be read)"
	}
	return d
}

func secretKey(pluginName, name string) string { return secretPrefix + pluginName + "/" + name }

func secretAAD(pluginName, name string) []byte {
	return []byte(secretAADDomain + pluginName + "\x00" + name)
}

// secretsKeyPath is where the secrets key lives: next to the store
// directory, in the toolhost home.
func (s *Store) secretsKeyPath() string { return filepath.Join(filepath.Dir(s.dir), SecretsKeyName) }

// SetSecret encrypts value and stores it as plugin's secret name.
func (s *Store) SetSecret(pluginName, name, value string) error {
	if err := plugin.ValidSecretName(name); err != nil {
		return fmt.Errorf("store: secret name: %w", err)
	}
	if err := plugin.ValidSecretValue(value); err != nil {
		return fmt.Errorf("store: secret %s: %w", name, err)
	}
	key, err := s.secretsKey(true)
	if err != nil {
		return err
	}
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	rec := sealedSecret{Nonce: nonce, Ciphertext: aead.Seal(nil, nonce, []byte(value), secretAAD(pluginName, name))}
	return putJSON(s, secretKey(pluginName, name), rec, JournalEntry{Action: "secret_set", Subject: pluginName, Description: fmt.Sprintf("secret_set %s %s", pluginName, name)})
}

// RemoveSecret removes plugin's secret name.
func (s *Store) RemoveSecret(pluginName, name string) error {
	names, err := s.SecretNames(pluginName)
	if err != nil {
		return err
	}
	if i := sort.SearchStrings(names, name); i == len(names) || names[i] != name {
		return SecretNotSetError(pluginName, name)
	}
	return deleteKey(s, secretKey(pluginName, name), JournalEntry{Action: "secret_remove", Subject: pluginName, Description: fmt.Sprintf("secret_remove %s %s", pluginName, name)})
}

// SecretNotSetError is RemoveSecret's error for a secret without a value
// (errors.Is ErrNotFound).
func SecretNotSetError(pluginName, name string) error {
	return fmt.Errorf("%w: plugin %s has no secret %q set (see `toolhost secret list %s`)", ErrNotFound, pluginName, name, pluginName)
}

// SecretNames lists the names of plugin's secrets that are set, sorted.
func (s *Store) SecretNames(pluginName string) ([]string, error) {
	var out []string
	err := s.viewSealed(func(txn *badger.Txn) error {
		return iterate(txn, secretPrefix+pluginName+"/", func(k string, _ []byte) error {
			out = append(out, k)
			return nil
		})
	})
	sort.Strings(out)
	return out, err
}

// Secrets decrypts plugin's secrets. A value that does not decrypt (a
// different secrets.key, or a record moved) is ErrSecretsKey.
func (s *Store) Secrets(pluginName string) (map[string]string, error) {
	raw := map[string][]byte{}
	err := s.viewSealed(func(txn *badger.Txn) error {
		return iterate(txn, secretPrefix+pluginName+"/", func(k string, v []byte) error {
			raw[k] = append([]byte(nil), v...)
			return nil
		})
	})
	if err != nil || len(raw) == 0 {
		return map[string]string{}, err
	}
	key, err := s.secretsKey(false)
	if err != nil {
		return nil, err
	}
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	out := make(map[string]string, len(raw))
	for name, v := range raw {
		var rec sealedSecret
		if err := json.Unmarshal(v, &rec); err != nil || len(rec.Nonce) != aead.NonceSize() {
			return nil, fmt.Errorf("%w: secret %s of plugin %s: the record is damaged; set it again with `toolhost secret set %s %s`", ErrCorrupt, name, pluginName, pluginName, name)
		}
		plain, err := aead.Open(nil, rec.Nonce, rec.Ciphertext, secretAAD(pluginName, name))
		if err != nil {
			return nil, fmt.Errorf("%w: secret %s of plugin %s does not decrypt with %s (was the key file replaced?); restore %s from the backup of this home, or set the secret again with `toolhost secret set %s %s`",
				ErrSecretsKey, name, pluginName, s.secretsKeyPath(), SecretsKeyName, pluginName, name)
		}
		out[name] = string(plain)
	}
	return out, nil
}

// secretsKey reads the secrets key, creating it when create is set and it
// does not exist yet. The file is written in full under a temporary name
// and linked into place, so a reader never sees half a key and two
// processes creating it at once end up with the same one.
func (s *Store) secretsKey(create bool) ([]byte, error) {
	path := s.secretsKeyPath()
	key, err := readKeyFile(path, secretsKeyHeader)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	if !create {
		return nil, fmt.Errorf("%w: %s is missing; restore it from the backup of this home, or remove the secrets and set them again", ErrSecretsKey, path)
	}
	if has, err := s.hasSecrets(); err != nil {
		return nil, err
	} else if has {
		return nil, fmt.Errorf("%w: %s is missing but the store holds secrets encrypted under it; restore it from the backup of this home (a new key would not open them)", ErrSecretsKey, path)
	}
	key = make([]byte, chacha20poly1305.KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d.new", path, os.Getpid())
	if err := writeFileSynced(tmp, []byte(secretsKeyHeader+hex.EncodeToString(key)+"\n")); err != nil {
		return nil, fmt.Errorf("store: write %s: %w", tmp, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return readKeyFile(path, secretsKeyHeader)
		}
		return nil, fmt.Errorf("store: create %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return key, nil
}

func (s *Store) hasSecrets() (bool, error) {
	var has bool
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(secretPrefix)})
		defer it.Close()
		it.Rewind()
		has = it.Valid()
		return nil
	})
	return has, err
}
