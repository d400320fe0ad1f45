package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/toolhost/toolhost/signing"
)

// PluginRecord is one installed plugin, as signed.
type PluginRecord struct {
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Digest      signing.Digest `json:"digest"`
	Manifest    []byte         `json:"manifest"`    // exact signed bytes
	WasmSHA256  string         `json:"wasm_sha256"` // hex
	Signatures  []byte         `json:"signatures"`  // signatures.json as in the bundle
	InstalledAt time.Time      `json:"installed_at"`
}

const (
	pluginPrefix     = "plugin/"
	blobPrefix       = "blob/"
	highWaterPrefix  = "hiwater/"
	quarantinePrefix = "quarantine/"
)

// PutPlugin stores rec and its wasm in one transaction, replacing any
// plugin of the same name, and records mark as the rollback high-water
// mark of that name. It returns once the write is on disk.
func (s *Store) PutPlugin(rec PluginRecord, wasm []byte, mark HighWaterMark) error {
	sum := sha256.Sum256(wasm)
	if hex.EncodeToString(sum[:]) != rec.WasmSHA256 {
		return fmt.Errorf("store: wasm does not match the record's sha256")
	}
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	markVal := mark.encode()
	err = s.update(len(wasm)+len(val)+len(markVal)+256, func(txn *badger.Txn) error {
		blobKey := []byte(blobPrefix + rec.WasmSHA256)
		if _, err := txn.Get(blobKey); errors.Is(err, badger.ErrKeyNotFound) {
			if err := txn.Set(blobKey, wasm); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		var old PluginRecord
		if err := getJSON(txn, pluginPrefix+rec.Name, &old); err == nil && old.WasmSHA256 != rec.WasmSHA256 {
			if err := dropBlobIfUnused(txn, old.WasmSHA256, rec.Name); err != nil {
				return err
			}
		}
		if err := txn.Set([]byte(pluginPrefix+rec.Name), val); err != nil {
			return err
		}
		if err := txn.Delete([]byte(quarantinePrefix + rec.Name)); err != nil {
			return err
		}
		if err := txn.Set([]byte(highWaterPrefix+rec.Name), markVal); err != nil {
			return err
		}
		return journal(txn, JournalEntry{Action: "install", Subject: rec.Name,
			Description: fmt.Sprintf("install %s %s %s", rec.Name, rec.Version, rec.Digest)})
	})
	if err != nil {
		return fmt.Errorf("store: install %s: %w", rec.Name, err)
	}
	return nil
}

// SetSignatures replaces the stored signatures of plugin name, whose
// stored digest must be digest: the same content, signed again. Nothing
// else of the record changes, and the write is one transaction.
func (s *Store) SetSignatures(name string, digest signing.Digest, signatures []byte) error {
	err := s.update(len(signatures)+256, func(txn *badger.Txn) error {
		var rec PluginRecord
		if err := getJSON(txn, pluginPrefix+name, &rec); err != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%w: plugin %q is not installed; install the bundle instead", ErrNotFound, name)
			}
			return err
		}
		if !rec.Digest.Equal(digest) {
			return fmt.Errorf("the installed %s %s has digest %s, not %s; install the bundle again", name, rec.Version, rec.Digest, digest)
		}
		rec.Signatures = signatures
		val, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if err := txn.Set([]byte(pluginPrefix+name), val); err != nil {
			return err
		}
		return journal(txn, JournalEntry{Action: "install", Subject: name,
			Description: fmt.Sprintf("install %s %s %s with new signatures (same content)", name, rec.Version, rec.Digest)})
	})
	if err != nil {
		return fmt.Errorf("store: update the signatures of %s: %w", name, err)
	}
	return nil
}

// dropBlobIfUnused deletes a blob no plugin other than except refers to.
func dropBlobIfUnused(txn *badger.Txn, sha, except string) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pluginPrefix), PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if string(it.Item().Key()) == pluginPrefix+except {
			continue
		}
		var rec PluginRecord
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &rec) }); err == nil && rec.WasmSHA256 == sha {
			return nil
		}
	}
	return txn.Delete([]byte(blobPrefix + sha))
}

// Plugin returns the record of an installed plugin.
func (s *Store) Plugin(name string) (PluginRecord, error) {
	var rec PluginRecord
	err := s.view(func(txn *badger.Txn) error { return getJSON(txn, pluginPrefix+name, &rec) })
	if errors.Is(err, ErrNotFound) {
		return rec, fmt.Errorf("%w: plugin %q is not installed", ErrNotFound, name)
	}
	return rec, err
}

// Plugins returns every installed plugin, sorted by name.
func (s *Store) Plugins() ([]PluginRecord, error) {
	var out []PluginRecord
	err := s.view(func(txn *badger.Txn) error {
		return iterate(txn, pluginPrefix, func(_ string, v []byte) error {
			var rec PluginRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("%w: plugin record: %v", ErrCorrupt, err)
			}
			out = append(out, rec)
			return nil
		})
	})
	return out, err
}

// Blob returns the wasm with the given sha256 (hex), checking the hash.
func (s *Store) Blob(sha string) ([]byte, error) {
	var data []byte
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(blobPrefix + sha))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("%w: wasm blob %s is missing", ErrCorrupt, sha)
		}
		if err != nil {
			return err
		}
		data, err = item.ValueCopy(nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != sha {
		return nil, fmt.Errorf("%w: wasm blob %s", ErrCorrupt, sha)
	}
	return data, nil
}

// CheckBlob checks that the stored wasm with the given sha256 (hex) is
// present and still hashes to it, like Blob, without copying it: a host
// that already holds those bytes re-verifies the store's copy at every
// reload, and a copy per plugin per reload (up to 64 MiB each) was garbage
// the host's resident memory had to carry.
func (s *Store) CheckBlob(sha string) error {
	return s.view(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(blobPrefix + sha))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("%w: wasm blob %s is missing", ErrCorrupt, sha)
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if sum := sha256.Sum256(v); hex.EncodeToString(sum[:]) != sha {
				return fmt.Errorf("%w: wasm blob %s", ErrCorrupt, sha)
			}
			return nil
		})
	})
}

// RemovePlugin deletes an installed plugin. Its high-water mark stays.
func (s *Store) RemovePlugin(name string) error {
	// The plugin's configuration and credentials go with it, in the same
	// transaction: they would apply to a plugin installed again under
	// this name, and a kill between two writes would leave them behind.
	secrets, err := s.SecretNames(name)
	if err != nil {
		return err
	}
	return s.update(256, func(txn *badger.Txn) error {
		if err := txn.Delete([]byte(configPrefix + name)); err != nil {
			return err
		}
		for _, n := range secrets {
			if err := txn.Delete([]byte(secretKey(name, n))); err != nil {
				return err
			}
		}
		var rec PluginRecord
		if err := getJSON(txn, pluginPrefix+name, &rec); err != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%w: plugin %q is not installed (see `toolhost plugin list`)", ErrNotFound, name)
			}
			// A corrupt record can still be removed.
		}
		if rec.WasmSHA256 != "" {
			if err := dropBlobIfUnused(txn, rec.WasmSHA256, name); err != nil {
				return err
			}
		}
		if err := txn.Delete([]byte(quarantinePrefix + name)); err != nil {
			return err
		}
		if err := txn.Delete([]byte(pluginPrefix + name)); err != nil {
			return err
		}
		desc := "remove " + name
		if rec.Version != "" {
			desc += fmt.Sprintf(" (%s %s)", rec.Version, rec.Digest)
		}
		return journal(txn, JournalEntry{Action: "remove", Subject: name, Description: desc})
	})
}
