package audit

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/rawio"
)

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
