package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// The store's identity. The change journal numbers a store's changes 1,
// 2, 3, …, and the audit log's records of them carry that number
// (store_seq); a store deleted and made anew beside a kept log numbers
// from 1 again, so a number alone does not say which store's change a
// record accounts for. Every store therefore has a random identity, made
// with it and never changed, which the records of its changes carry
// (store_id) next to the number. It is kept under the journal's prefix,
// sealed like the journal: an identity changed or deleted outside
// toolhost fails closed.
//
// A store made before identities gets one at its first open by a toolhost
// that has them: Adopted says so, for records of its changes from before
// then carry no store_id (audit.Reconcile takes those as its own).
//
// A copy of the store restored from a backup is the same store: same
// identity, and a journal that ends where the copy's did, so it numbers
// its changes after that again. audit.Reconcile says so where it finds it
// (RATIONALE.md, "Records name the store whose change they account for").
const (
	journalIdentityKey  = journalPrefix + "id"
	journalAnnouncedKey = journalPrefix + "announced"
	identityBytes       = 16
)

// Identity is a store's identity.
type Identity struct {
	// ID is 32 lowercase hex digits, random, made with the store.
	ID string `json:"id"`
	// Adopted is set for an identity given to a store that existed before
	// identities (made by an older toolhost).
	Adopted bool `json:"adopted,omitempty"`
}

// Identity returns the store's identity (read at Open).
func (s *Store) Identity() Identity { return s.id }

// setIdentity gives the store in txn a new identity.
func setIdentity(txn *badger.Txn, adopted bool) (Identity, error) {
	b := make([]byte, identityBytes)
	if _, err := rand.Read(b); err != nil {
		return Identity{}, err
	}
	id := Identity{ID: hex.EncodeToString(b), Adopted: adopted}
	val, err := json.Marshal(id)
	if err != nil {
		return Identity{}, err
	}
	return id, txn.Set([]byte(journalIdentityKey), val)
}

// getIdentity reads the identity in txn; ErrNotFound for none.
func getIdentity(txn *badger.Txn) (Identity, error) {
	var id Identity
	if err := getJSON(txn, journalIdentityKey, &id); err != nil {
		return Identity{}, err
	}
	if b, err := hex.DecodeString(id.ID); err != nil || len(b) != identityBytes || hex.EncodeToString(b) != id.ID {
		return Identity{}, fmt.Errorf("%w: the store's identity %q is not %d lowercase hex digits", ErrCorrupt, id.ID, 2*identityBytes)
	}
	return id, nil
}

// hasAnyKey reports whether txn holds any key: a store that is not new.
func hasAnyKey(txn *badger.Txn) bool {
	it := txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	it.Rewind()
	return it.Valid()
}

// loadIdentity reads the store's identity into s.id, giving a store from
// before identities one (Adopted).
func (s *Store) loadIdentity() error {
	err := s.viewSealed(func(txn *badger.Txn) (err error) {
		s.id, err = getIdentity(txn)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		err = s.update(128, func(txn *badger.Txn) (err error) {
			s.id, err = setIdentity(txn, true)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("store: read the store's identity: %w", err)
	}
	return nil
}

// JournalAnnounced reports whether the store was announced to an audit
// log (MarkJournalAnnounced): whether audit.Reconcile has checked, once,
// whether the log beside it followed another store before.
func (s *Store) JournalAnnounced() (bool, error) {
	var done bool
	err := s.viewSealed(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte(journalAnnouncedKey))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		done = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: read the change journal: %w", err)
	}
	return done, nil
}

// MarkJournalAnnounced notes that the store was announced to an audit log.
func (s *Store) MarkJournalAnnounced() error {
	err := s.update(64, func(txn *badger.Txn) error {
		if _, err := txn.Get([]byte(journalAnnouncedKey)); err == nil || !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		return txn.Set([]byte(journalAnnouncedKey), []byte("true"))
	})
	if err != nil {
		return fmt.Errorf("store: mark the store announced to the audit log: %w", err)
	}
	return nil
}
