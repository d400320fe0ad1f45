// Package store keeps installed plugins, their wasm blobs, the trust store
// and the rollback high-water marks in a badger database under the toolhost
// home.
//
// Trust model: the store is not trusted to be intact. It keeps the exact
// bytes that were signed, and the host re-verifies them (signatures against
// the current trust set, the blob against its sha256) every time it loads a
// plugin. Writes are synced before a call returns, so a reported install
// survives a crash. badger allows one process per directory; Open fails with
// ErrLocked while another process (such as `toolhost serve`) holds it.
//
// What the store guarantees about damage: badger verifies the checksum of
// every table block it reads; the security state (trusted keys,
// revocations, threshold, high-water marks, quarantine: authenticatedPrefixes)
// is sealed with an HMAC under a key kept beside the store (DIR.key, 0600),
// so a changed, added or deleted record of it fails every read with
// ErrTampered instead of trusting a revoked key or forgetting a high-water
// mark; a panic inside badger on damaged files is returned as ErrCorrupt; a
// write is refused with ErrNoSpace before it starts when the disk could fill
// during it; every operator change adds an entry to a change journal in
// its own transaction (journal.go), from which the audit log recovers the
// record of a change whose process died before recording it. What it does
// not do: protect against anyone who can read the
// key file (they can reseal any state), or roll back to a consistent older
// state by itself.
package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/toolhost/toolhost/signing"
)

// Errors.
var (
	ErrNotFound = errors.New("store: not found")
	ErrLocked   = errors.New("store: the store is in use by another toolhost process")
	ErrCorrupt  = errors.New("store: stored data is damaged")
)

// Store is an open store. It is safe for concurrent use.
type Store struct {
	db      *badger.DB
	dir     string
	keyPath string
	key     []byte // MAC key of the security state; immutable after Open

	// writeMu serializes writes, so that the anchor file (DIR.seal)
	// follows the seal of each commit in order.
	writeMu sync.Mutex
}

// Open opens (creating if needed) the store in dir, and its MAC key in
// dir + ".key".
func Open(dir string, log *slog.Logger) (st *Store, err error) {
	// The key and the anchor are named after the directory (DIR.key,
	// DIR.seal): an empty or relative name like "" or "." would put the
	// store in the working directory and its key in "..key".
	if dir == "" {
		return nil, errors.New("store: no directory given: pass the directory that holds the store (toolhost uses $TOOLHOST_HOME/store)")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if filepath.Dir(dir) == dir {
		return nil, fmt.Errorf("store: %s is a file system root: pass a directory inside one, whose parent can hold its key file", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := checkFree(dir, minOpenFreeBytes); err != nil {
		return nil, err
	}
	opts := badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithChecksumVerificationMode(options.OnTableAndBlockRead).
		WithLogger(badgerLogger{log}).
		WithNumMemtables(2).
		WithMemTableSize(memTableBytes).
		WithValueLogFileSize(256 << 20).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).
		WithNumCompactors(2).
		WithCompactL0OnClose(true)
	if err := precheck(opts, badgerLogger{log}.warn); err != nil {
		return nil, err
	}
	db, err := openBadger(opts)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, lockedError(dir)
		}
		return nil, fmt.Errorf("store: open %s: %w; %s", dir, err, openAdvice(dir, err))
	}
	s := &Store{db: db, dir: dir, keyPath: dir + ".key"}
	if err := s.loadStateKey(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// openBadger opens badger, turning a panic on damaged files into an error.
func openBadger(opts badger.Options) (db *badger.DB, err error) {
	defer recoverCorrupt(&err)
	return badger.Open(opts)
}

// recoverCorrupt turns a panic inside badger into ErrCorrupt. badger
// panics on some damaged files (slice bounds on a truncated table).
func recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: the database panicked reading it (%v); restore the store directory from a backup", ErrCorrupt, r)
	}
}

// Close flushes and closes the store.
func (s *Store) Close() (err error) {
	defer recoverCorrupt(&err)
	return s.db.Close()
}

// update runs fn in a read-write transaction, reseals the security state
// and syncs. payload is about how many bytes fn writes, for the free-space
// check.
func (s *Store) update(payload int, fn func(txn *badger.Txn) error) (err error) {
	if err := checkSpace(s.dir, payload); err != nil {
		return err
	}
	defer recoverCorrupt(&err)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var old, next []byte
	err = s.db.Update(func(txn *badger.Txn) error {
		// Resealing a state that fails its check would launder the damage.
		if err := s.checkSeal(txn); err != nil {
			return err
		}
		item, err := txn.Get([]byte(sealKey))
		if err != nil {
			return err
		}
		if old, err = item.ValueCopy(nil); err != nil {
			return err
		}
		if err := fn(txn); err != nil {
			return err
		}
		if next, err = s.resealed(txn); err != nil {
			return err
		}
		if bytes.Equal(old, next) {
			return nil
		}
		return s.writeAnchor(old, next)
	})
	if err != nil {
		// If the commit failed after the anchor accepted next, the anchor
		// still accepts old too; the next write or Open settles it.
		return err
	}
	if err := s.sync(); err != nil {
		return err
	}
	if bytes.Equal(old, next) {
		return nil
	}
	return s.writeAnchor(next)
}

// view runs fn in a read-only transaction.
func (s *Store) view(fn func(txn *badger.Txn) error) (err error) {
	defer recoverCorrupt(&err)
	return s.db.View(fn)
}

// viewSealed runs fn in a read-only transaction after checking the seal
// of the security state, in the same snapshot.
func (s *Store) viewSealed(fn func(txn *badger.Txn) error) error {
	return s.view(func(txn *badger.Txn) error {
		if err := s.checkSeal(txn); err != nil {
			return err
		}
		return fn(txn)
	})
}

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

func (s *Store) sync() error {
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("store: sync: %w", err)
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

// Quarantine records why a plugin failed verification. The plugin stays in
// the store (for inspection and removal) but is not served.
func (s *Store) Quarantine(name, reason string) error {
	val, _ := json.Marshal(quarantineRecord{Reason: reason, At: time.Now().UTC()})
	return s.update(len(val), func(txn *badger.Txn) error { return txn.Set([]byte(quarantinePrefix+name), val) })
}

type quarantineRecord struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Quarantined returns the reason for every quarantined plugin.
func (s *Store) Quarantined() (map[string]string, error) {
	out := map[string]string{}
	err := s.viewSealed(func(txn *badger.Txn) error {
		return iterate(txn, quarantinePrefix, func(k string, v []byte) error {
			var q quarantineRecord
			_ = json.Unmarshal(v, &q)
			out[k] = q.Reason
			return nil
		})
	})
	return out, err
}

func getJSON(txn *badger.Txn, key string, v any) error {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	return item.Value(func(b []byte) error {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
		}
		return nil
	})
}

func iterate(txn *badger.Txn, prefix string, fn func(key string, val []byte) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix), PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := strings.TrimPrefix(string(it.Item().Key()), prefix)
		if err := it.Item().Value(func(v []byte) error { return fn(k, v) }); err != nil {
			return err
		}
	}
	return nil
}

// putJSON sets key to v as the operator's change e (journal), in one
// transaction.
func putJSON(s *Store, key string, v any, e JournalEntry) error {
	val, err := json.Marshal(v)
	if err != nil {
		return err
	}
	err = s.update(len(val)+len(e.Description)+128, func(txn *badger.Txn) error {
		if err := txn.Set([]byte(key), val); err != nil {
			return err
		}
		return journal(txn, e)
	})
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// deleteKey deletes key as the operator's change e (journal), in one
// transaction.
func deleteKey(s *Store, key string, e JournalEntry) error {
	err := s.update(len(e.Description)+128, func(txn *badger.Txn) error {
		if err := txn.Delete([]byte(key)); err != nil {
			return err
		}
		return journal(txn, e)
	})
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// badgerLogger sends badger's warnings and errors to slog and drops the rest.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	if b.l != nil {
		b.l.Error("store: " + strings.TrimSpace(fmt.Sprintf(f, a...)))
	}
}
func (b badgerLogger) Warningf(f string, a ...any) {
	if b.l != nil {
		b.l.Warn("store: " + strings.TrimSpace(fmt.Sprintf(f, a...)))
	}
}
func (b badgerLogger) warn(msg string, args ...any) {
	if b.l != nil {
		b.l.Warn(msg, args...)
	}
}
func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}
