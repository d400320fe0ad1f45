package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/signing"
)

const (
	trustKeyPrefix     = "trust/key/"
	trustRevokedPrefix = "trust/revoked/"
	trustPolicyKey     = "trust/policy"
)

type trustedKeyJSON struct {
	Name      string            `json:"name"`
	PublicKey signing.PublicKey `json:"public_key"`
	AddedAt   time.Time         `json:"added_at"`
}

type policyJSON struct {
	Threshold int `json:"threshold"`
}

// ErrTrustConflict is wrapped by AddTrustedKey's refusals: the name is
// another key's, or the key is already trusted under another name.
var ErrTrustConflict = errors.New("store: conflicts with a trusted key")

// AddTrustedKey trusts a curator key. Adding a revoked key records it but it
// still does not count until it is un-revoked.
//
// A name identifies one key (compared ignoring case), so that signers
// shown by name are distinct: a name another key holds (revoked or not) is
// refused. Adding a key that is already trusted under the same name
// changes nothing; under another name it is refused, so that a key is
// never renamed as a side effect of adding it.
func (s *Store) AddTrustedKey(k curator.TrustedKey) error {
	id := k.Key.ID()
	val, err := json.Marshal(trustedKeyJSON{Name: k.Name, PublicKey: k.Key, AddedAt: k.AddedAt.UTC()})
	if err != nil {
		return err
	}
	err = s.update(len(val)+256, func(txn *badger.Txn) error {
		same := false
		if err := iterate(txn, trustKeyPrefix, func(key string, v []byte) error {
			var j trustedKeyJSON
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("%w: trust key %s: %v", ErrCorrupt, key, err)
			}
			switch {
			case key == id.String() && j.Name == k.Name:
				same = true
			case key == id.String():
				return fmt.Errorf("%w: key %s is already trusted as %q; to rename it to %q, run `toolhost trust remove %s`, then add it again with --name %s",
					ErrTrustConflict, id, j.Name, k.Name, id, k.Name)
			case strings.EqualFold(j.Name, k.Name):
				return fmt.Errorf("%w: the name %q is already used by the trusted key %s; give this key (%s) another name with --name NAME",
					ErrTrustConflict, j.Name, key, id)
			}
			return nil
		}); err != nil || same {
			return err // same: nothing changes, nothing is journaled
		}
		if err := txn.Set([]byte(trustKeyPrefix+id.String()), val); err != nil {
			return err
		}
		return journal(txn, JournalEntry{Action: "trust_add", Subject: id.String(), Description: fmt.Sprintf("trust_add %s curator %s", id, k.Name)})
	})
	if err != nil && !errors.Is(err, ErrTrustConflict) {
		return fmt.Errorf("store: %w", err)
	}
	return err
}

// RemoveTrustedKey stops trusting a key.
func (s *Store) RemoveTrustedKey(id signing.KeyID) error {
	ts, err := s.TrustSet()
	if err != nil {
		return err
	}
	if _, ok := ts.Keys[id]; !ok {
		return fmt.Errorf("%w: key %s is not in the trust store (see `toolhost trust list`)", ErrNotFound, id)
	}
	return deleteKey(s, trustKeyPrefix+id.String(), JournalEntry{Action: "trust_remove", Subject: id.String(), Description: "trust_remove " + id.String()})
}

// Revoke marks a key as revoked.
func (s *Store) Revoke(id signing.KeyID, at time.Time) error {
	return putJSON(s, trustRevokedPrefix+id.String(), at.UTC(), JournalEntry{Action: "trust_revoke", Subject: id.String(), Description: "trust_revoke " + id.String()})
}

// Unrevoke lifts a revocation.
func (s *Store) Unrevoke(id signing.KeyID) error {
	ts, err := s.TrustSet()
	if err != nil {
		return err
	}
	if _, ok := ts.Revoked[id]; !ok {
		return fmt.Errorf("%w: key %s is not revoked", ErrNotFound, id)
	}
	return deleteKey(s, trustRevokedPrefix+id.String(), JournalEntry{Action: "trust_unrevoke", Subject: id.String(), Description: "trust_unrevoke " + id.String()})
}

// SetThreshold sets how many distinct trusted curators must sign a plugin.
func (s *Store) SetThreshold(n int) error {
	if n < 1 || n > 16 {
		return fmt.Errorf("store: threshold %d out of range: use 1 to 16", n)
	}
	return putJSON(s, trustPolicyKey, policyJSON{Threshold: n}, JournalEntry{Action: "trust_threshold", Subject: fmt.Sprint(n), Description: fmt.Sprintf("trust_threshold %d", n)})
}

// TrustSet reads the whole trust state in one consistent snapshot.
func (s *Store) TrustSet() (curator.TrustSet, error) {
	ts := curator.TrustSet{Keys: map[signing.KeyID]curator.TrustedKey{}, Revoked: map[signing.KeyID]time.Time{}, Threshold: 1}
	err := s.viewSealed(func(txn *badger.Txn) error {
		if err := iterate(txn, trustKeyPrefix, func(k string, v []byte) error {
			id, err := signing.ParseKeyID(k)
			if err != nil {
				return fmt.Errorf("%w: trust key %q: %v", ErrCorrupt, k, err)
			}
			var j trustedKeyJSON
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("%w: trust key %s: %v", ErrCorrupt, k, err)
			}
			if j.PublicKey.ID() != id {
				return fmt.Errorf("%w: trust key %s does not match its ID", ErrCorrupt, k)
			}
			ts.Keys[id] = curator.TrustedKey{Name: j.Name, Key: j.PublicKey, AddedAt: j.AddedAt}
			return nil
		}); err != nil {
			return err
		}
		if err := iterate(txn, trustRevokedPrefix, func(k string, v []byte) error {
			id, err := signing.ParseKeyID(k)
			if err != nil {
				return fmt.Errorf("%w: revoked key %q: %v", ErrCorrupt, k, err)
			}
			var at time.Time
			_ = json.Unmarshal(v, &at)
			ts.Revoked[id] = at
			return nil
		}); err != nil {
			return err
		}
		var p policyJSON
		if err := getJSON(txn, trustPolicyKey, &p); err == nil {
			ts.Threshold = p.Threshold
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		return nil
	})
	return ts, err
}
