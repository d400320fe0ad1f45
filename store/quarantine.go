package store

import (
	"encoding/json"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

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
