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
// record of a change whose process died before recording it; every store
// has a random identity made with it (identity.go), which the records of
// its changes carry. What it does
// not do: protect against anyone who can read the
// key file (they can reseal any state), or roll back to a consistent older
// state by itself.
package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
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
	key     []byte   // MAC key of the security state; immutable after Open
	id      Identity // the store's identity (identity.go); immutable after Open

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
		// A value-log entry's checksum is checked before its header is
		// decoded; without it, a damaged header made badger keep the
		// file's read lock and Close wait forever (RATIONALE.md).
		WithVerifyValueChecksum(true).
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
	if err := s.loadIdentity(); err != nil {
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
