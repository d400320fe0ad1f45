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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/rawio"
	"github.com/toolhost/toolhost/internal/strictjson"
)

// FileName is the audit log's name inside the toolhost home.
const FileName = "audit.jsonl"

// MaxLineBytes bounds one record; longer lines are refused by the parser
// (and never written: Append truncates argument values to fit).
const MaxLineBytes = 256 << 10

// Record kinds.
const (
	KindCall   = "call"
	KindChange = "change"
)

// Record is one audit record. Call records fill the call fields, change
// records Action, Subject and Detail.
type Record struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Prev is the hash of the record before; "" for the first record.
	Prev string `json:"prev"`
	Kind string `json:"kind"`

	// Calls.
	Entry           string          `json:"entry,omitempty"`
	Tool            string          `json:"tool,omitempty"`
	Plugin          string          `json:"plugin,omitempty"`
	Digest          string          `json:"digest,omitempty"`
	ArgumentsSHA256 string          `json:"arguments_sha256,omitempty"`
	Arguments       json.RawMessage `json:"arguments,omitempty"` // only with serve --log-arguments
	Decision        string          `json:"decision,omitempty"`
	DecidedBy       string          `json:"decided_by,omitempty"`
	Outcome         string          `json:"outcome,omitempty"` // "ok" or the error code
	Message         string          `json:"message,omitempty"`
	DurationMS      float64         `json:"duration_ms,omitempty"`
	WaitedMS        float64         `json:"waited_ms,omitempty"`

	// Changes: install, remove, trust_add, trust_remove, trust_revoke,
	// trust_unrevoke, trust_threshold, policy_set, policy_unset,
	// config_set, secret_set, secret_remove, approval_approve,
	// approval_deny, approval_timeout; the log's own: audit_repair,
	// audit_unchecked_start, audit_journal_gap (journal.go).
	Action  string `json:"action,omitempty"`
	Subject string `json:"subject,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Actor   string `json:"actor,omitempty"`
	// StoreSeq is the store's change journal number of the change the
	// record accounts for (store.JournalEntry.Seq), for changes the store
	// made; 0 (left out) otherwise. See journal.go.
	StoreSeq uint64 `json:"store_seq,omitempty"`

	Hash string `json:"hash"`
}

var recordShape = strictjson.Object{
	"seq": strictjson.Any{}, "time": strictjson.Any{}, "prev": strictjson.Any{}, "kind": strictjson.Any{},
	"entry": strictjson.Any{}, "tool": strictjson.Any{}, "plugin": strictjson.Any{}, "digest": strictjson.Any{},
	"arguments_sha256": strictjson.Any{}, "arguments": strictjson.Any{}, "decision": strictjson.Any{},
	"decided_by": strictjson.Any{}, "outcome": strictjson.Any{}, "message": strictjson.Any{},
	"duration_ms": strictjson.Any{}, "waited_ms": strictjson.Any{},
	"action": strictjson.Any{}, "subject": strictjson.Any{}, "detail": strictjson.Any{}, "actor": strictjson.Any{},
	"store_seq": strictjson.Any{}, "hash": strictjson.Any{},
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseLine parses one line of the log and checks that the record is intact
// on its own: strict JSON, canonical encoding, and a hash that matches.
// Whether it fits the chain is Verify's business.
func ParseLine(line []byte) (Record, error) {
	var r Record
	if len(line) > MaxLineBytes {
		return r, fmt.Errorf("line is %d bytes, the limit is %d", len(line), MaxLineBytes)
	}
	if err := strictjson.Decode(line, recordShape, &r); err != nil {
		return Record{}, fmt.Errorf("not a valid audit record: %v", err)
	}
	if !hashRE.MatchString(r.Hash) {
		return Record{}, fmt.Errorf("hash %q is not 64 lowercase hex digits", truncate(r.Hash))
	}
	if r.Prev != "" && !hashRE.MatchString(r.Prev) {
		return Record{}, fmt.Errorf("prev %q is not 64 lowercase hex digits", truncate(r.Prev))
	}
	want, hash, err := encode(r)
	if err != nil {
		return Record{}, fmt.Errorf("cannot re-encode the record: %v", err)
	}
	if hash != r.Hash {
		return Record{}, fmt.Errorf("its content does not match its hash (changed after it was written)")
	}
	if !bytes.Equal(want, line) {
		return Record{}, fmt.Errorf("it is not in canonical form (changed after it was written)")
	}
	return r, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		n := 80
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n] + "…"
	}
	return s
}

// validStrings replaces each run of invalid UTF-8 in r's strings with
// U+FFFD. Those strings come from outside (a tool name in a URL, a
// plugin's error message), and the line must read back as written:
// encoding/json writes an invalid byte as the escape \ufffd, which parses
// to U+FFFD, which encodes as itself — a line whose hash verification
// could never match (TestAnyBytesInAnyFieldVerifyAndReopen).
func validStrings(r *Record) {
	for _, p := range stringsOf(r) {
		if !utf8.ValidString(*p) {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
		}
	}
}

// stringsOf is every string of r that its writer chose (all but Prev and
// Hash, which the log sets).
func stringsOf(r *Record) [14]*string {
	return [...]*string{
		&r.Kind, &r.Entry, &r.Tool, &r.Plugin, &r.Digest, &r.ArgumentsSHA256,
		&r.Decision, &r.DecidedBy, &r.Outcome, &r.Message,
		&r.Action, &r.Subject, &r.Detail, &r.Actor,
	}
}

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

// Group lets one fsync cover the records of calls that are about to end.
// inFlight counts the calls that will append a record or are appending it
// (serve: the calls inside host.Call). Before it syncs, the appender that
// leads the next fsync waits, at most maxDelay, while some of them have
// not appended yet. An fsync costs ~170 µs and ~100 µs of CPU on this
// machine (RATIONALE.md, "Audit group commit"), more than the rest of a
// trivial call; a lone call never waits. Call Group before the log is
// shared.
func (l *Log) Group(inFlight func() int, maxDelay time.Duration) {
	l.coming = func() int { return inFlight() - int(l.waiting.Load()) }
	l.maxDelay = maxDelay
}

// pwrite writes lines at off with a raw system call (rawio: the
// scheduler's system-call path would wake sysmon, as a sync would).
func pwrite(f *os.File, lines []byte, off int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rawio.Pwrite(rc, lines, off)
}

// datasync makes f's written data durable: fdatasync (the data and the
// file size, not the file's times, which nothing reads), as a raw system
// call. Through the runtime's syscall path, a ~170 µs fdatasync made the
// scheduler's monitor take the P away and wake another thread every time,
// and kept the monitor polling every 20 µs: ~40 µs of CPU per call at 8
// clients. Raw, the goroutine keeps its P while the disk works; the cost
// is that a stop-the-world (GC) waits for the fdatasync to end, and the
// calls waiting on it could not answer earlier anyway.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			_, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, fd, 0, 0)
			if e != unix.EINTR {
				if e != 0 {
					serr = e
				}
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
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

// checkpoint makes audit.jsonl durable as written and records that in the
// write-ahead file, starting a new lap of its ring. syncMu is held (or the
// log not yet shared). It names the last record written to the file, not
// l.seq: records appended meanwhile wait in buf (TestCheckpointsMatchTheFile).
func (l *Log) checkpoint() error {
	if err := l.sync(l.f); err != nil {
		return fmt.Errorf("audit: sync %s: %w", l.path, err)
	}
	return l.wal.checkpoint(checkpoint{length: uint64(l.size), seq: l.fileSeq, hash: l.fileHead}, l.sync)
}

func (l *Log) sync(f *os.File) error {
	if l.fsync != nil {
		return l.fsync(f)
	}
	return datasync(f)
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

// Append completes r (seq, time when zero, prev, hash), writes it and
// fsyncs the file: it returns once the record is durable. Concurrent
// appends share fsyncs (see syncMu).
func (l *Log) Append(r Record) (Record, error) {
	r, err := l.write(r)
	if err != nil {
		return Record{}, err
	}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	select { // wake a leader that waits for this record (gather)
	case l.wrote <- struct{}{}:
	default:
	}
	if err := l.syncThrough(r.Seq); err != nil {
		return Record{}, err
	}
	return r, nil
}

// write completes r and queues its line for the next sync (syncThrough
// writes the queued lines, then fsyncs them).
func (l *Log) write(r Record) (Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return Record{}, l.err
	}
	r.Seq, r.Prev = l.seq+1, l.head
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	r.Time = r.Time.UTC()
	if r.Kind == "" {
		r.Kind = KindChange
	}
	validStrings(&r)
	line, hash, err := encode(r)
	if err == nil && r.Arguments != nil {
		// Argument values are the caller's bytes (json.Valid takes lone
		// surrogates, duplicate keys and invalid UTF-8, which the parser
		// refuses): they are written only in a line that reads back.
		why := ""
		if len(line) >= MaxLineBytes {
			why = "too long for one record"
		} else if _, perr := ParseLine(line); perr != nil {
			why = "not strict JSON"
		}
		if why != "" {
			r.Arguments = nil
			r.Message = truncate(r.Message) + " (argument values left out: " + why + ")"
			line, hash, err = encode(r)
		}
	}
	if err == nil && len(line) >= MaxLineBytes {
		// The rest that can be long comes from callers (a tool name that
		// does not exist, a reason): keep its start, never a line that
		// Open would refuse as damaged.
		for _, p := range stringsOf(&r) {
			*p = truncate(*p)
		}
		r.Message += " (fields shortened: too long for one record)"
		line, hash, err = encode(r)
		if err == nil && len(line) >= MaxLineBytes {
			err = fmt.Errorf("%d bytes even shortened, the limit is %d", len(line), MaxLineBytes)
		}
	}
	if err != nil {
		return Record{}, fmt.Errorf("audit: encode record: %w", err)
	}
	l.buf = append(append(l.buf, line...), '\n')
	l.seq, l.head = r.Seq, hash
	r.Hash = hash
	return r, nil
}

// syncThrough returns once record seq is durable: at once when an fsync
// that began after it was written has ended, else after one more. One
// appender leads each fsync (leadSync); those that come while it runs
// wait for it to end and then look again.
//
// Why not just syncMu: waiting on the mutex, the appenders of a group
// were woken one after another, each by the one before once it had run;
// a closed channel wakes them all together.
func (l *Log) syncThrough(seq uint64) error {
	for l.synced.Load() < seq {
		l.mu.Lock()
		if done := l.syncDone; done != nil {
			l.mu.Unlock()
			<-done
			continue
		}
		done := make(chan struct{})
		l.syncDone = done
		l.mu.Unlock()
		err := l.leadSync(seq)
		l.mu.Lock()
		l.syncDone = nil
		l.mu.Unlock()
		close(done)
		if err != nil {
			return err
		}
	}
	return nil
}

// leadSync writes the records waiting in buf and makes them durable,
// unless record seq is durable already (a racing Close made it so).
func (l *Log) leadSync(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced.Load() >= seq {
		return nil
	}
	l.gather()
	l.mu.Lock()
	written, head, err, lines := l.seq, l.head, l.err, l.buf
	l.buf = l.spare[:0]
	l.mu.Unlock()
	if err != nil {
		return err
	}
	fail := func(err error) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err == nil {
			l.setErr(fmt.Errorf("%w; the log refuses further records until toolhost restarts", err))
		}
		return l.err
	}
	if err := l.checkFiles(); err != nil {
		return fail(err)
	}
	if err := pwrite(l.f, lines, l.size); err != nil {
		return fail(fmt.Errorf("audit: write %s: %w", l.path, err))
	}
	l.size, l.fileSeq, l.fileHead = l.size+int64(len(lines)), written, head
	if l.wal.fits(len(lines)) {
		err = l.wal.append(lines, l.sync)
	} else {
		err = l.checkpoint() // the ring is full: sync audit.jsonl itself
	}
	if err != nil {
		return fail(err)
	}
	l.spare = lines[:0]
	l.synced.Store(written)
	return nil
}

// gather waits, for the fsync about to start, while records are expected
// soon (see Group). Only the leader waits; the others write their
// records meanwhile and wait for its sync to end.
func (l *Log) gather() {
	if l.coming == nil || l.coming() <= 0 {
		return
	}
	t := time.NewTimer(l.maxDelay)
	defer t.Stop()
	for l.coming() > 0 {
		select {
		case <-l.wrote:
		case <-t.C:
			return
		}
	}
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

// errClosed refuses appends after Close.
var errClosed = errors.New("audit: the log is closed (toolhost is shutting down) and this record was not written; once toolhost is back, check with `toolhost audit list` what was recorded and redo what is missing")

// Close writes the records whose appends have not returned (a Close
// racing them), makes the log durable and closes its files. Those appends
// then return their records; later ones are refused (errClosed). A second
// Close does nothing.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	lines, seq, head, failed := l.buf, l.seq, l.head, l.err
	l.buf = nil
	if failed == errClosed {
		l.mu.Unlock()
		return nil
	}
	l.setErr(errClosed)
	l.mu.Unlock()
	var err error
	if failed == nil {
		if err = pwrite(l.f, lines, l.size); err == nil {
			l.size, l.fileSeq, l.fileHead = l.size+int64(len(lines)), seq, head
			if err = l.checkpoint(); err == nil {
				l.synced.Store(seq) // the racing appends' records are durable
			}
		}
	}
	err = errors.Join(err, l.wal.f.Close())
	return errors.Join(err, l.f.Close())
}
