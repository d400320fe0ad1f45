package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// The change journal. Every operator change the store makes (an install,
// a removal, a trust, policy, config or secret change) adds an entry in
// the same transaction as the change itself, so a change in effect always
// has its entry. The audit log records a change after the store made it:
// a process killed between the two leaves a change in effect with no
// record, and the next process that opens the store and the log finds it
// here (audit.Reconcile) and records it then. The writer marks the
// entries whose records are durable (MarkJournalRecorded), so that check
// reads nothing of the log unless a change was left unrecorded.
//
// Entries say what changed from the store's point of view, never a
// secret's or a config value (names only). Internal writes (quarantine,
// the mark itself, dropping a removed plugin's settings) add none. The
// journal is sealed like the security state (authenticatedPrefixes): an
// entry or the mark changed or deleted outside toolhost fails closed.
// Only the last journalKeep entries are kept.
const (
	journalPrefix      = "journal/"
	journalEntryPrefix = journalPrefix + "e/"
	journalRecordedKey = journalPrefix + "recorded"
	journalKeep        = 64
)

// JournalEntry is one change the store made.
type JournalEntry struct {
	// Seq numbers the store's changes: 1, 2, 3, … with no gap.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Action is the audit log's name for the change (install, remove,
	// trust_add, policy_set, secret_set, …), Subject what it changed (a
	// plugin, a key ID, a pattern).
	Action  string `json:"action"`
	Subject string `json:"subject"`
	// Description says what changed: "install notes 1.2.0 sha256:…".
	Description string `json:"description"`
}

func journalKey(seq uint64) []byte {
	return fmt.Appendf(nil, "%s%020d", journalEntryPrefix, seq)
}

// journal adds e to the journal inside txn, the transaction of the change
// it describes, numbered after the last entry, and drops the entry that
// falls out of the kept window.
func journal(txn *badger.Txn, e JournalEntry) error {
	last, err := lastJournalSeq(txn)
	if err != nil {
		return err
	}
	e.Seq, e.Time = last+1, time.Now().UTC()
	val, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := txn.Set(journalKey(e.Seq), val); err != nil {
		return err
	}
	if e.Seq > journalKeep {
		return txn.Delete(journalKey(e.Seq - journalKeep))
	}
	return nil
}

// lastJournalSeq is the sequence number of the newest entry in txn, 0 for
// none.
func lastJournalSeq(txn *badger.Txn) (uint64, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(journalEntryPrefix), Reverse: true})
	defer it.Close()
	it.Seek([]byte(journalEntryPrefix + "~")) // after every digit
	if !it.Valid() {
		return 0, nil
	}
	k := string(it.Item().Key())
	seq, err := strconv.ParseUint(strings.TrimPrefix(k, journalEntryPrefix), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: journal entry key %q", ErrCorrupt, k)
	}
	return seq, nil
}

// JournalSeq returns the sequence number of the store's last change (0
// before the first).
func (s *Store) JournalSeq() (uint64, error) {
	var seq uint64
	err := s.view(func(txn *badger.Txn) (err error) {
		seq, err = lastJournalSeq(txn)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: read the change journal: %w", err)
	}
	return seq, nil
}

// JournalSince returns the kept entries after seq, oldest first.
func (s *Store) JournalSince(seq uint64) ([]JournalEntry, error) {
	var out []JournalEntry
	err := s.viewSealed(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(journalEntryPrefix), PrefetchValues: true})
		defer it.Close()
		for it.Seek(journalKey(seq + 1)); it.Valid(); it.Next() {
			var e JournalEntry
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &e) }); err != nil {
				return fmt.Errorf("%w: journal entry %s: %v", ErrCorrupt, it.Item().Key(), err)
			}
			if string(journalKey(e.Seq)) != string(it.Item().Key()) {
				return fmt.Errorf("%w: journal entry %s does not match its key", ErrCorrupt, it.Item().Key())
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the change journal: %w", err)
	}
	return out, nil
}

// JournalRecorded returns the sequence number through which the audit log
// is known to record the store's changes (MarkJournalRecorded), 0 for
// none.
func (s *Store) JournalRecorded() (uint64, error) {
	var seq uint64
	err := s.viewSealed(func(txn *badger.Txn) error {
		return getRecordedMark(txn, &seq)
	})
	if err != nil {
		return 0, fmt.Errorf("store: read the change journal: %w", err)
	}
	return seq, nil
}

func getRecordedMark(txn *badger.Txn, seq *uint64) error {
	err := getJSON(txn, journalRecordedKey, seq)
	if errors.Is(err, ErrNotFound) {
		*seq = 0
		return nil
	}
	return err
}

// MarkJournalRecorded notes that the audit log durably records the store's
// changes through seq. The mark only goes up.
func (s *Store) MarkJournalRecorded(seq uint64) error {
	err := s.update(32, func(txn *badger.Txn) error {
		var cur uint64
		if err := getRecordedMark(txn, &cur); err != nil || cur >= seq {
			return err
		}
		val, _ := json.Marshal(seq)
		return txn.Set([]byte(journalRecordedKey), val)
	})
	if err != nil {
		return fmt.Errorf("store: mark the change journal recorded: %w", err)
	}
	return nil
}
