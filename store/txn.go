package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
)

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

func (s *Store) sync() error {
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("store: sync: %w", err)
	}
	return nil
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
