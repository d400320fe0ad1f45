package audit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"
)

// The write-ahead file (audit.jsonl.wal) makes a record durable before its
// answer for less than an fdatasync of audit.jsonl costs. Appending grows
// audit.jsonl, so each fdatasync of it writes the file's size too: two
// writes and a cache flush (~200 µs and ~100 µs of CPU on this machine's
// virtual disk). The write-ahead file is written once in full at creation
// and then only overwritten in place, so its fdatasync writes the data and
// flushes (~120 µs, ~65 µs of CPU). RATIONALE.md, "The audit log's
// write-ahead file".
//
// Layout: two checkpoint slots (walSlot bytes each, written alternately, the
// valid one with the higher generation wins) in the first walRing bytes,
// then the ring: the lines of the records written since the checkpoint,
// byte for byte as in audit.jsonl, from walRing on.
//
// Invariant: every record in audit.jsonl past the checkpoint's length was
// written to the ring, after the checkpoint, and each append returns only
// once the ring holds it durably. A group that does not fit in the rest of
// the ring syncs audit.jsonl instead and starts a new lap with a new
// checkpoint. So after a crash, the records of audit.jsonl up to the
// checkpoint are intact (they were synced), and those after it that
// returned are in the ring (Open restores them, chained from the
// checkpoint's hash: a stale line of an earlier lap or life cannot chain).
const (
	walSuffix       = ".wal"
	walSize   int64 = 4 << 20
	walRing   int64 = 4096
	walSlot   int64 = 512
	walMagic        = "THAUDWAL"
	// slot: magic, generation, length, seq, hash (32 raw bytes), crc32c.
	walSlotLen = 8 + 8 + 8 + 8 + 32 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpoint says that audit.jsonl's first length bytes are durable and end
// with record seq, whose hash is hash ("" and 0 for an empty log).
type checkpoint struct {
	gen, length, seq uint64
	hash             string
}

func (c checkpoint) encode() ([]byte, error) {
	b := make([]byte, 0, walSlotLen)
	b = append(b, walMagic...)
	b = binary.LittleEndian.AppendUint64(b, c.gen)
	b = binary.LittleEndian.AppendUint64(b, c.length)
	b = binary.LittleEndian.AppendUint64(b, c.seq)
	var h [32]byte
	if c.hash != "" {
		if !hashRE.MatchString(c.hash) {
			return nil, fmt.Errorf("checkpoint hash %q is not 64 lowercase hex digits", truncate(c.hash))
		}
		hex.Decode(h[:], []byte(c.hash)) //nolint:errcheck // 64 hex digits, checked above
	}
	b = append(b, h[:]...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

func decodeCheckpoint(b []byte) (checkpoint, bool) {
	if len(b) < walSlotLen || string(b[:8]) != walMagic {
		return checkpoint{}, false
	}
	b = b[:walSlotLen]
	if crc32.Checksum(b[:walSlotLen-4], castagnoli) != binary.LittleEndian.Uint32(b[walSlotLen-4:]) {
		return checkpoint{}, false
	}
	c := checkpoint{
		gen:    binary.LittleEndian.Uint64(b[8:]),
		length: binary.LittleEndian.Uint64(b[16:]),
		seq:    binary.LittleEndian.Uint64(b[24:]),
	}
	if h := b[32:64]; c.seq > 0 {
		c.hash = hex.EncodeToString(h)
	} else if !bytes.Equal(h, make([]byte, 32)) || c.length != 0 {
		return checkpoint{}, false
	}
	return c, true
}

// wal is the open write-ahead file. It is used under Log.syncMu only.
type wal struct {
	f    *os.File
	path string
	size int64
	pos  int64 // where the next group's lines go
	ck   checkpoint
}

func walPath(logPath string) string { return logPath + walSuffix }

// openWAL opens (creating it) the write-ahead file and reads its
// checkpoint; ok is false when it has none that is valid (new, from a
// toolhost before it, a crash while it was made, or damaged): the caller
// then falls back to reading audit.jsonl alone and calls init.
func openWAL(path string, size int64) (w *wal, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("audit: open %s: %w", path, err)
	}
	w = &wal{f: f, path: path, size: size, pos: walRing}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("audit: %s: %w", path, err)
	}
	if st.Size() != size {
		return w, false, nil
	}
	var slots [2 * walSlot]byte
	if _, err := f.ReadAt(slots[:], 0); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("audit: read %s: %w", path, err)
	}
	w.ck, ok = newestCheckpoint(slots[:])
	return w, ok, nil
}

// newestCheckpoint decodes the two slots at the start of b and returns the
// valid one with the higher generation.
func newestCheckpoint(b []byte) (checkpoint, bool) {
	a, okA := decodeCheckpoint(b[:walSlot])
	c, okC := decodeCheckpoint(b[walSlot:])
	if okA && (!okC || a.gen > c.gen) {
		return a, true
	}
	return c, okC
}

// init writes the whole file (zeros), so that later writes overwrite
// allocated, written blocks and its fdatasyncs carry no size or extent
// changes.
func (w *wal) init() error {
	zero := make([]byte, 1<<20)
	for off := int64(0); off < w.size; off += int64(len(zero)) {
		n := min(int64(len(zero)), w.size-off)
		if _, err := w.f.WriteAt(zero[:n], off); err != nil {
			return fmt.Errorf("audit: write %s: %w", w.path, err)
		}
	}
	if err := w.f.Truncate(w.size); err != nil {
		return fmt.Errorf("audit: %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("audit: sync %s: %w", w.path, err)
	}
	w.ck = checkpoint{}
	return nil
}

// checkpoint records that audit.jsonl (already synced) is durable through
// c, and starts a new lap of the ring.
func (w *wal) checkpoint(c checkpoint, fsync func(*os.File) error) error {
	c.gen = w.ck.gen + 1
	b, err := c.encode()
	if err != nil {
		return fmt.Errorf("audit: %s: %w", w.path, err)
	}
	if _, err := w.f.WriteAt(b, int64(c.gen%2)*walSlot); err != nil {
		return fmt.Errorf("audit: write %s: %w", w.path, err)
	}
	if err := fsync(w.f); err != nil {
		return fmt.Errorf("audit: sync %s: %w", w.path, err)
	}
	w.ck, w.pos = c, walRing
	return nil
}

// fits reports whether n more bytes fit in this lap of the ring.
func (w *wal) fits(n int) bool { return w.pos+int64(n) <= w.size }

// append writes lines (which fit) to the ring and makes them durable.
func (w *wal) append(lines []byte, fsync func(*os.File) error) error {
	if err := pwrite(w.f, lines, w.pos); err != nil {
		return fmt.Errorf("audit: write %s: %w", w.path, err)
	}
	w.pos += int64(len(lines))
	if err := fsync(w.f); err != nil {
		return fmt.Errorf("audit: sync %s: %w", w.path, err)
	}
	return nil
}

// candidates returns the ring's lines that look like records after seq,
// by their seq. Nothing is trusted: each is parsed and chained by the
// caller.
func (w *wal) candidates(after uint64) (map[uint64][][]byte, error) {
	ring := make([]byte, w.size-walRing)
	if _, err := w.f.ReadAt(ring, walRing); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("audit: read %s: %w", w.path, err)
	}
	return ringCandidates(ring, after), nil
}

// ringCandidates is candidates on the ring's bytes.
func ringCandidates(ring []byte, after uint64) map[uint64][][]byte {
	const prefix = `{"seq":`
	out := map[uint64][][]byte{}
	for len(ring) > 0 {
		i := bytes.IndexByte(ring, '\n')
		if i < 0 {
			break
		}
		line := ring[:i]
		ring = ring[i+1:]
		if !bytes.HasPrefix(line, []byte(prefix)) {
			continue
		}
		seq, ok := leadingUint(line[len(prefix):])
		if ok && seq > after {
			out[seq] = append(out[seq], line)
		}
	}
	return out
}

// leadingUint parses the decimal digits at the start of b.
func leadingUint(b []byte) (uint64, bool) {
	var v uint64
	n := 0
	for ; n < len(b) && n < 20 && b[n] >= '0' && b[n] <= '9'; n++ {
		v = v*10 + uint64(b[n]-'0')
	}
	return v, n > 0
}

// lastLineBefore returns the line of f that ends (with its newline) at
// end.
func lastLineBefore(f *os.File, end int64) ([]byte, error) {
	n := min(end, MaxLineBytes+1)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, end-n); err != nil {
		return nil, err
	}
	if buf[n-1] != '\n' {
		return nil, errors.New("no newline")
	}
	buf = buf[:n-1]
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		return buf[i+1:], nil
	} else if n == end {
		return buf, nil
	}
	return nil, errors.New("longer than a record")
}

// recoverFrom finds the log's head from the checkpoint: it keeps the
// records of audit.jsonl after it that continue the chain, cuts the rest
// (never made durable: a crash), and appends the ring's records that
// continue the chain from there (durable, but not yet in audit.jsonl). It
// returns what it did, for the repair record ("" when nothing).
func (l *Log) recoverFrom(w *wal) (string, error) {
	ck := w.ck
	st, err := l.f.Stat()
	if err != nil {
		return "", fmt.Errorf("audit: %s: %w", l.path, err)
	}
	moveAside := fmt.Sprintf("run `toolhost audit verify`, then move %s and %s aside to keep them as evidence, and create an empty %s to start a new log (its first record will say it began empty)", l.path, w.path, l.path)
	if st.Size() < int64(ck.length) {
		return "", fmt.Errorf("%w: %s is %d bytes, shorter than the %d bytes (through record seq %d) toolhost made durable: records were cut from it; %s",
			ErrLogDamaged, l.path, st.Size(), ck.length, ck.seq, moveAside)
	}
	if ck.length > 0 {
		line, err := lastLineBefore(l.f, int64(ck.length))
		var r Record
		if err == nil {
			r, err = ParseLine(line)
		}
		if err == nil && (r.Seq != ck.seq || r.Hash != ck.hash) {
			err = fmt.Errorf("it is record seq %d, the write-ahead file's checkpoint says seq %d", r.Seq, ck.seq)
		}
		if err != nil {
			return "", fmt.Errorf("%w: the last record of %s that toolhost made durable (the line ending at byte %d) is damaged (%v); %s", ErrLogDamaged, l.path, ck.length, err, moveAside)
		}
	}
	l.seq, l.head = ck.seq, ck.hash
	good := int64(ck.length)

	// Records written after the checkpoint: keep those that chain.
	if _, err := l.f.Seek(good, io.SeekStart); err != nil {
		return "", fmt.Errorf("audit: %s: %w", l.path, err)
	}
	rd := bufio.NewReaderSize(l.f, MaxLineBytes+1)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			break // the end, a torn last line, or no record (too long)
		}
		line = line[:len(line)-1]
		r, perr := ParseLine(line)
		if perr != nil || r.Seq != l.seq+1 || r.Prev != l.head {
			break
		}
		l.seq, l.head = r.Seq, r.Hash
		good += int64(len(line)) + 1
	}
	cut := st.Size() - good

	// Durable records audit.jsonl lost: from the ring.
	cands, err := w.candidates(l.seq)
	if err != nil {
		return "", err
	}
	var restored []byte
	n := 0
	for {
		next, r, ok := chainNext(cands, l.seq, l.head)
		if !ok {
			break
		}
		l.seq, l.head = r.Seq, r.Hash
		restored = append(append(restored, next...), '\n')
		n++
	}
	if cut == 0 && n == 0 {
		return "", nil
	}
	if err := l.f.Truncate(good); err != nil {
		return "", fmt.Errorf("audit: cut %s: %w", l.path, err)
	}
	if _, err := l.f.WriteAt(restored, good); err != nil {
		return "", fmt.Errorf("audit: write %s: %w", l.path, err)
	}
	var did []string
	if cut > 0 {
		did = append(did, fmt.Sprintf("cut %d bytes at its end that were never made durable (a write that did not finish)", cut))
	}
	if n > 0 {
		did = append(did, fmt.Sprintf("restored %d records from %s that a crash kept out of it", n, w.path))
	}
	return strings.Join(did, "; "), nil
}

// chainNext returns the candidate line that continues the chain after
// record seq, whose hash is head: record seq+1 with prev head.
func chainNext(cands map[uint64][][]byte, seq uint64, head string) ([]byte, Record, bool) {
	for _, line := range cands[seq+1] {
		if r, err := ParseLine(line); err == nil && r.Prev == head {
			return line, r, true
		}
	}
	return nil, Record{}, false
}
