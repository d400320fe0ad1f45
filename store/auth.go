package store

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	badger "github.com/dgraph-io/badger/v4"
)

// authenticatedPrefixes are the record kinds whose loss or change would
// weaken security without any signature noticing: which keys are trusted,
// which are revoked, the threshold, the rollback high-water marks, the
// quarantine, the approval policy rules, plugin settings and the change
// journal (journal.go). Every write reseals them and every read of one of them checks
// the seal, so damage or an edit made outside toolhost fails closed.
//
// To authenticate a new kind of record, add its key prefix here (one line);
// records written through Store.update and read through Store.viewSealed
// are then covered. Prefixes must not be prefixes of one another.
var authenticatedPrefixes = []string{
	trustKeyPrefix,
	trustRevokedPrefix,
	trustPolicyKey,
	highWaterPrefix,
	quarantinePrefix,
	policyRulePrefix,
	configPrefix,
	secretPrefix,
	journalPrefix,
}

// sealKey holds the MAC over every authenticated record. It is not itself
// authenticated: a missing seal is detected by the key file's presence.
const sealKey = "auth/seal"

const (
	stateKeyBytes  = 32
	stateKeyHeader = "toolhost-store-key-v1\n"
	macDomain      = "toolhost store security state v1\x00"
)

// ErrTampered means the security state failed its integrity check.
var ErrTampered = errors.New("store: the security state (trusted keys, revocations, threshold, version high-water marks, quarantine, approval policy) failed its integrity check: the store was damaged or edited outside toolhost")

// tamperedf wraps ErrTampered with what was found and what to do.
func tamperedf(keyPath, format string, args ...any) error {
	return fmt.Errorf("%w (%s); restore the store directory and %s together from a backup, or move both aside, re-add the trusted curator keys (`toolhost trust add`, `trust revoke`, `trust policy`) and reinstall the plugins",
		ErrTampered, fmt.Sprintf(format, args...), filepath.Base(keyPath))
}

// stateMAC computes the seal over the authenticated records visible in txn
// (including its own pending writes).
func stateMAC(txn *badger.Txn, key []byte) ([]byte, error) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(macDomain))
	var n [8]byte
	for _, p := range authenticatedPrefixes {
		err := iterate(txn, p, func(k string, v []byte) error {
			for _, b := range [][]byte{[]byte(p + k), v} {
				binary.BigEndian.PutUint64(n[:], uint64(len(b)))
				m.Write(n[:])
				m.Write(b)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return m.Sum(nil), nil
}

// reseal writes the seal for the state in txn.
func (s *Store) reseal(txn *badger.Txn) error {
	_, err := s.resealed(txn)
	return err
}

// resealed writes the seal for the state in txn and returns it.
func (s *Store) resealed(txn *badger.Txn) ([]byte, error) {
	mac, err := stateMAC(txn, s.key)
	if err != nil {
		return nil, err
	}
	return mac, txn.Set([]byte(sealKey), mac)
}

// checkSeal verifies the seal of the state in txn.
func (s *Store) checkSeal(txn *badger.Txn) error {
	item, err := txn.Get([]byte(sealKey))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return tamperedf(s.keyPath, "its seal is missing although %s exists", filepath.Base(s.keyPath))
	}
	if err != nil {
		return err
	}
	stored, err := item.ValueCopy(nil)
	if err != nil {
		return err
	}
	want, err := stateMAC(txn, s.key)
	if err != nil {
		return err
	}
	if !hmac.Equal(stored, want) {
		return tamperedf(s.keyPath, "its seal does not match the records")
	}
	return nil
}

// loadStateKey reads the store's MAC key, or, for a store that has never
// been sealed, creates the key and seals the current state. The key file is
// written in full under a temporary name, the state sealed with it, and
// only then renamed into place: a store.key that exists means the seal
// must exist too, so a store that lost its records is not taken for a new
// one.
func (s *Store) loadStateKey() error {
	key, err := readStateKey(s.keyPath)
	if err == nil {
		s.key = key
		if err := s.view(s.checkSeal); err != nil {
			return err
		}
		return s.checkAnchor()
	}
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	sealed, err := s.hasSeal()
	if err != nil {
		return err
	}
	pending := s.keyPath + ".new"
	key, err = readStateKey(pending)
	switch {
	case err == nil:
		// A first open was interrupted after writing the key.
	case errors.Is(err, os.ErrNotExist), errors.Is(err, errShortKey):
		if sealed {
			return tamperedf(s.keyPath, "%s is missing but the store is sealed", filepath.Base(s.keyPath))
		}
		key = make([]byte, stateKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if err := writeFileSynced(pending, append([]byte(stateKeyHeader+hex.EncodeToString(key)), '\n')); err != nil {
			return fmt.Errorf("store: write %s: %w", pending, err)
		}
	default:
		return err
	}
	s.key = key
	if sealed {
		if err := s.view(s.checkSeal); err != nil {
			return err
		}
	} else if err := s.sealFirst(); err != nil {
		return err
	}
	seal, err := s.currentSeal()
	if err != nil {
		return err
	}
	if err := s.writeAnchor(seal); err != nil {
		return err
	}
	if err := os.Rename(pending, s.keyPath); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return syncDir(filepath.Dir(s.keyPath))
}

// sealFirst seals a store that has never been sealed: a new one, or one
// written by a toolhost before seals, whose state is adopted as it is.
func (s *Store) sealFirst() error {
	if err := checkSpace(s.dir, 0); err != nil {
		return err
	}
	err := s.db.Update(func(txn *badger.Txn) error {
		// A new store is born with its identity; one from before seals
		// (it holds records) adopts one.
		if _, err := getIdentity(txn); errors.Is(err, ErrNotFound) {
			if _, err := setIdentity(txn, hasAnyKey(txn)); err != nil {
				return err
			}
		}
		return s.reseal(txn)
	})
	if err != nil {
		return fmt.Errorf("store: seal the security state: %w", err)
	}
	return s.sync()
}

// currentSeal returns the seal stored in badger.
func (s *Store) currentSeal() ([]byte, error) {
	var seal []byte
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(sealKey))
		if err != nil {
			return err
		}
		seal, err = item.ValueCopy(nil)
		return err
	})
	return seal, err
}

func (s *Store) hasSeal() (bool, error) {
	var sealed bool
	err := s.view(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte(sealKey))
		if err == nil {
			sealed = true
			return nil
		}
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		return err
	})
	return sealed, err
}

var errShortKey = errors.New("store: key file is incomplete")

// readStateKey reads the store's MAC key file.
func readStateKey(path string) ([]byte, error) { return readKeyFile(path, stateKeyHeader) }

// readKeyFile reads a key file (header, then 32 bytes in hex), refusing one
// another user owns or others can read or write.
func readKeyFile(path, header string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("store: %s is not a regular file; remove it or restore it from a backup", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("store: %s is owned by uid %d, not by you (uid %d); refusing to use it", path, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("store: %s can be read or written by group or others (mode %04o); run `chmod 600 %s` if it is yours and was not changed", path, fi.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", path, err)
	}
	rest, ok := bytes.CutPrefix(data, []byte(header))
	key, herr := hex.DecodeString(string(bytes.TrimSpace(rest)))
	if !ok || herr != nil || len(key) != stateKeyBytes {
		if len(data) == 0 {
			return nil, errShortKey
		}
		return nil, fmt.Errorf("store: %s is damaged; restore it from the backup of this store", path)
	}
	return key, nil
}

// writeFileSynced creates path (0600, exclusively) with data, on disk.
func writeFileSynced(path string, data []byte) error {
	_ = os.Remove(path) // an incomplete earlier attempt
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}
