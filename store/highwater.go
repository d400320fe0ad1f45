package store

import (
	"bytes"
	"encoding/json"
	"errors"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/toolhost/toolhost/signing"
)

// HighWaterMark is what the rollback check remembers of a plugin name: the
// highest version ever installed under it, and the digest of the content
// last installed at that version. It outlives the plugin's removal.
type HighWaterMark struct {
	Version string
	// Digest is the zero digest when it is not known: a mark written
	// before marks held digests.
	Digest signing.Digest
}

// HasDigest reports whether the mark knows the digest of its version.
func (m HighWaterMark) HasDigest() bool { return m.Digest != signing.Digest{} }

// highWaterJSON is the stored form of a mark. A mark written before marks
// held digests is the bare version string, never starting with '{'.
type highWaterJSON struct {
	Version string          `json:"version"`
	Digest  *signing.Digest `json:"digest,omitempty"`
}

func (m HighWaterMark) encode() []byte {
	v := highWaterJSON{Version: m.Version}
	if m.HasDigest() {
		v.Digest = &m.Digest
	}
	b, _ := json.Marshal(v) // a string and a text marshaler: cannot fail
	return b
}

// decodeHighWater reads both forms. A value that is neither is returned
// as a version that does not parse: the host treats it as damaged, and a
// damaged mark never blocks (the seal catches tampering first).
func decodeHighWater(b []byte) HighWaterMark {
	if !bytes.HasPrefix(b, []byte("{")) {
		return HighWaterMark{Version: string(b)}
	}
	var v highWaterJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return HighWaterMark{Version: string(b)}
	}
	m := HighWaterMark{Version: v.Version}
	if v.Digest != nil {
		m.Digest = *v.Digest
	}
	return m
}

// HighWater returns the rollback high-water mark of name, and whether
// there is one.
func (s *Store) HighWater(name string) (HighWaterMark, bool, error) {
	var m HighWaterMark
	err := s.viewSealed(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(highWaterPrefix + name))
		if err != nil {
			return err
		}
		return item.Value(func(b []byte) error {
			m = decodeHighWater(b)
			return nil
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return HighWaterMark{}, false, nil
	}
	return m, err == nil, err
}
