// Package audit is toolhost's tamper-evident audit log: one JSON record per
// line in $TOOLHOST_HOME/audit.jsonl, each carrying its sequence number, the
// hash of the record before it, and its own hash, so that a changed,
// deleted, inserted or reordered record breaks the chain at that record.
//
// A record's hash is the hex sha256 of its line with the trailing
// `,"hash":"…"` member removed; the line is the canonical encoding of the
// record (Go's encoding/json of Record, HTML escaping off), so there is
// exactly one valid line per record. An operator can check a line without
// toolhost by cutting its bytes, not by re-encoding it:
// `sed -E 's/,"hash":"[0-9a-f]{64}"}$/}/' | tr -d '\n' | sha256sum` over
// that line gives its hash. (`jq -cj 'del(.hash)'` re-encodes strings, and
// differs once one holds an escape jq writes otherwise: \u00e9 or \/ in
// logged argument values, U+2028, DEL.)
//
// The log is append-only and written by one process: the one holding the
// store (badger's directory lock makes that unique). Every Append is
// durable before it returns, so a record is durable before the answer it
// accounts for is sent: its line is written to audit.jsonl and to the
// write-ahead file audit.jsonl.wal, which is fdatasync'd (cheaper than
// syncing the growing audit.jsonl; audit.jsonl itself is synced when the
// write-ahead file's ring is full, on Close and on Open, which restores
// from it what a crash kept out of audit.jsonl: wal.go). Concurrent appends
// share one fdatasync (Group).
//
// What the chain guarantees, and what it does not: it has no key. Anyone
// who can write audit.jsonl can append a forged record with a correctly
// recomputed hash, or rewrite the whole chain from any record on, and the
// log still verifies; the defence is `toolhost audit verify --head` with a
// head (`toolhost audit head`) kept somewhere that person cannot write. The
// write-ahead file's checkpoint (how long the log was, and its last seq and
// hash, when toolhost last made it durable) lets Open and VerifyDurable
// catch records cut from the end below it without a kept head, but it is
// in the same directory and has no key either: whoever cuts both, or
// deletes the write-ahead file, is caught only by a kept head. Whoever
// deletes both is caught at the next start when the caller knows a log
// was kept (OpenKept, kept.go): toolhost then refuses to run until the
// log is restored, or until an operator begins a new one by creating an
// empty audit.jsonl, which the new log's first record then says.
//
// Without the write-ahead file: Open carries on from audit.jsonl alone.
// A log written before the write-ahead file existed is legitimate and must
// open (every record in it was synced in audit.jsonl itself), and nothing
// in the log tells it cheaply from one whose write-ahead file was deleted
// (records carry no mark of the file). So Open makes a new write-ahead
// file and, when the log is not empty, appends an audit_unchecked_start
// record naming the seq the chain continued from: the start is in the
// chain, for whoever compares it with a kept head.
package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FileName is the audit log's name inside the toolhost home.
const FileName = "audit.jsonl"

// Log appends records to the audit file. It is safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	f    *os.File
	wal  *wal
	path string
	// size is the bytes written to f, ending with record fileSeq, whose
	// hash is fileHead (guarded by syncMu; seq and head run ahead of them
	// while records wait in buf).
	size     int64
	fileSeq  uint64
	fileHead string
	seq      uint64
	head     string
	now      func() time.Time
	err      error // the first write error; the log refuses further appends
	// refused mirrors err (set under mu whenever err is) for Err, which
	// the Governor reads before every call: a load, not a wait for mu
	// behind the record being encoded.
	refused atomic.Pointer[error]
	// buf holds the records written since the last sync began, in order;
	// the appender that leads the next fsync writes them to the file in
	// one write (spare is the buffer before, for reuse).
	buf, spare []byte

	// syncMu is held by the one fsync in progress; synced is the last
	// record it made durable (written under syncMu). Appends write under
	// mu and then wait for an fsync that began after their write: while
	// one runs, the records written meanwhile share the next (group
	// commit). The appends waiting for the sync in progress wait for
	// syncDone (guarded by mu) to close, all woken at once when it ends.
	syncMu sync.Mutex
	synced atomic.Uint64
	// fileID and walID are the files the paths named at open (identity.go).
	fileID, walID fileID
	syncDone      chan struct{}
	fsync         func(*os.File) error // tests count fsyncs; nil is datasync

	// coming, when set, counts the records expected soon; wrote gets a
	// token after each write. See Group.
	coming   func() int
	maxDelay time.Duration
	wrote    chan struct{}
	waiting  atomic.Int64 // Appends that wrote and wait for their sync
}

// Open opens (creating it 0600) the audit log at path, with its
// write-ahead file (path + ".wal", see wal.go), and finds its head. After a
// crash it cuts what was never made durable (a torn last line, say) and
// restores from the write-ahead file the records that were; either is
// recorded as a change record, so the chain stays verifiable.
func Open(path string) (*Log, error) { return open(path, walSize, nil) }

// open is Open with the write-ahead file's size and, for tests, the
// fdatasync (nil: datasync).
func open(path string, ringSize int64, fsync func(*os.File) error) (*Log, error) {
	return openLog(path, "", ringSize, fsync)
}

// openLog is open, and OpenKept when kept (why a log was kept) is set.
func openLog(path, kept string, ringSize int64, fsync func(*os.File) error) (l *Log, err error) {
	flags := os.O_RDWR | os.O_CREATE
	if kept != "" {
		flags = os.O_RDWR // never a new empty log where one was kept (kept.go)
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if kept != "" && errors.Is(err, os.ErrNotExist) {
		return nil, MissingError(path, kept)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	w, ok, err := openWAL(walPath(path), ringSize)
	if err != nil {
		f.Close()
		return nil, err
	}
	l = &Log{f: f, wal: w, path: path, now: time.Now, wrote: make(chan struct{}, 1), fsync: fsync}
	if l.fileID, err = idOf(f); err == nil {
		l.walID, err = idOf(w.f)
	}
	if err != nil {
		f.Close()
		w.f.Close()
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			w.f.Close()
		}
	}()
	var repair, unchecked string
	if ok {
		repair, err = l.recoverFrom(w)
	} else {
		// No checkpoint: a log from before the write-ahead file, or one
		// whose file was never finished. Every record that returned was
		// fsync'd in audit.jsonl itself.
		var torn int64
		if torn, err = l.findHead(); err == nil && torn > 0 {
			repair = fmt.Sprintf("cut a torn last line of %d bytes (a write that did not finish)", torn)
		}
		if err == nil {
			err = w.init()
		}
		if l.seq > 0 {
			// Carry on, and say so in the chain: see "Without the
			// write-ahead file" in the package doc.
			unchecked = fmt.Sprintf("no valid write-ahead file %s%s (a log from a toolhost before it, a crash while it was made, or the file was damaged or deleted): the chain continues from record seq %d, where %s ends; whether records were cut from its end before now cannot be checked here (`toolhost audit verify --head` with a head kept elsewhere can)",
				FileName, walSuffix, l.seq, FileName)
		} else if kept != "" {
			// An empty log where one was kept: begun anew by hand (kept.go).
			unchecked = uncheckedEmpty(kept)
		}
	}
	if err != nil {
		return nil, err
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	l.size, l.fileSeq, l.fileHead = end, l.seq, l.head
	if err := l.checkpoint(); err != nil {
		return nil, err
	}
	if repair != "" {
		if _, err := l.Append(Record{Kind: KindChange, Action: "audit_repair", Subject: FileName, Detail: repair}); err != nil {
			return nil, err
		}
	}
	if unchecked != "" {
		if _, err := l.Append(Record{Kind: KindChange, Action: "audit_unchecked_start", Subject: FileName, Detail: unchecked}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// findHead reads the last complete record for seq and head, and cuts an
// unfinished last line. It returns how many bytes it cut.
func (l *Log) findHead() (int64, error) {
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	rd := bufio.NewReaderSize(l.f, 64<<10)
	var last []byte
	var good int64
	for {
		line, err := rd.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(line) == 0 {
				break
			}
			if err := l.f.Truncate(good); err != nil {
				return 0, fmt.Errorf("audit: cut torn last line of %s: %w", l.path, err)
			}
			return int64(len(line)), l.setHead(last)
		}
		if err != nil {
			return 0, fmt.Errorf("audit: read %s: %w", l.path, err)
		}
		good += int64(len(line))
		last = append(last[:0], line...)
	}
	return 0, l.setHead(last)
}

func (l *Log) setHead(last []byte) error {
	if len(last) == 0 {
		return nil
	}
	r, err := ParseLine(bytes.TrimSuffix(last, []byte("\n")))
	if err != nil {
		return fmt.Errorf("audit: the last record of %s is damaged (%v); run `toolhost audit verify`, move the file aside to keep it as evidence, and create an empty %s to start a new log (its first record will say it began empty)", l.path, err, l.path)
	}
	l.seq, l.head = r.Seq, r.Hash
	return nil
}

// Head returns the sequence number and hash of the last record ("" when
// the log is empty).
func (l *Log) Head() (uint64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.head
}

// Err returns why the log refuses records (the first write or sync that
// failed, or Close), or nil while it takes them. A refusal lasts until the
// log is opened again.
func (l *Log) Err() error {
	if p := l.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// setErr sets err, with mu held.
func (l *Log) setErr(err error) {
	l.err = err
	l.refused.Store(&err)
}

// Path is the file the log writes.
func (l *Log) Path() string { return l.path }
