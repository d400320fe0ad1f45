package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// BadRecordError names the first record that breaks the log.
type BadRecordError struct {
	Line   int    // 1-based line number in the file
	Seq    uint64 // the seq the record claims, 0 when unreadable
	Reason string

	torn    bool  // the last line has no newline (errTornLastLine)
	tornLen int64 // its length
}

func (e *BadRecordError) Error() string {
	if e.Seq == 0 {
		return fmt.Sprintf("audit log broken at line %d: %s", e.Line, e.Reason)
	}
	return fmt.Sprintf("audit log broken at line %d (record seq %d): %s", e.Line, e.Seq, e.Reason)
}

// ErrLogMissing: there is no log where toolhost has run and kept one. A
// log that was never written reads as empty; one that was deleted must
// not (the caller knows which, e.g. from the store beside it).
var ErrLogMissing = errors.New("audit: the audit log is missing")

// ErrLogDamaged: Open found the log shorter than, or different from, what
// its write-ahead checkpoint says toolhost made durable, and will not
// write to it (the error says what was found and what to do).
var ErrLogDamaged = errors.New("audit: the audit log does not match what toolhost made durable")

// Summary is what an intact log holds.
type Summary struct {
	Records uint64
	Head    string // hash of the last record, "" when empty

	// With the write-ahead file (VerifyDurable), what the next Open
	// repairs after a crash, which is not damage: Pending records of the
	// write-ahead file continue the chain past the log's end (durable,
	// not yet in audit.jsonl), and Torn is the length of an unfinished
	// last line past what was made durable (never made durable).
	Pending int
	Torn    int64
}

// Verify reads a whole log and checks every record and the chain: seq
// counts 1, 2, 3…, each prev is the hash of the record before, each hash
// matches its record. The first bad record is returned as a
// *BadRecordError: a changed record fails its own hash; a deleted,
// inserted or reordered one breaks seq or prev at that line. Records cut
// from the end leave an intact shorter chain: pass head (a hash kept
// elsewhere, from `toolhost audit head`) to detect that too.
func Verify(r io.Reader, head string) (Summary, error) { return verify(r, head, nil) }

// VerifyDurable is Verify that also checks the log against what its
// write-ahead file says toolhost made durable (d, from ReadDurable; nil is
// Verify): a log that ends below the checkpoint's seq, or whose record at
// that seq is not the one made durable, is damaged as a *BadRecordError —
// records were cut, or the log was rewritten. What a crash left for Open
// to repair is not damage: it is reported in Summary (Pending, Torn).
func VerifyDurable(r io.Reader, head string, d *Durable) (Summary, error) {
	return verify(r, head, d)
}

func verify(r io.Reader, head string, d *Durable) (Summary, error) {
	var s Summary
	var prevSeq uint64
	var size int64 // bytes of the whole lines read
	headAt := 0
	err := scan(r, func(n int, line []byte) error {
		rec, err := ParseLine(line)
		if err != nil {
			return &BadRecordError{Line: n, Seq: claimedSeq(line), Reason: err.Error()}
		}
		switch {
		case rec.Seq != prevSeq+1:
			return &BadRecordError{Line: n, Seq: rec.Seq, Reason: fmt.Sprintf("seq %d follows seq %d: records were deleted, inserted or reordered here", rec.Seq, prevSeq)}
		case rec.Prev != s.Head:
			return &BadRecordError{Line: n, Seq: rec.Seq, Reason: "its prev does not match the hash of the record before it: a record was replaced, inserted or reordered here"}
		case d != nil && rec.Seq == d.ck.seq && rec.Hash != d.ck.hash:
			return &BadRecordError{Line: n, Seq: rec.Seq, Reason: fmt.Sprintf("it is not the record seq %d that toolhost made durable (the write-ahead file %s%s has hash %s for it): the log was rewritten up to here; restore %s from a backup",
				rec.Seq, FileName, walSuffix, d.ck.hash, FileName)}
		}
		prevSeq, s.Head = rec.Seq, rec.Hash
		s.Records++
		size += int64(len(line)) + 1
		if head != "" && rec.Hash == head {
			headAt = n
		}
		return nil
	})
	var bad *BadRecordError
	switch {
	case d != nil && s.Records < d.ck.seq && (err == nil || errors.As(err, &bad) && bad.torn):
		// Whole lines end below the checkpoint: cut (and maybe torn there).
		return s, d.cutError(s.Records, prevSeq)
	case d != nil && errors.As(err, &bad) && bad.torn && size >= int64(d.ck.length):
		// An unfinished last line past what was made durable: a write in
		// progress, or one a crash stopped; Open cuts it.
		s.Torn = bad.tornLen
		err = nil
	}
	if err != nil {
		return s, err
	}
	if d != nil {
		s.Pending = d.pending(s.Records, s.Head)
	}
	// A kept head found earlier in the chain means records were added
	// since it was taken: the log was not cut.
	if head != "" && headAt == 0 {
		return s, &BadRecordError{Line: int(s.Records) + 1, Reason: fmt.Sprintf("the head you kept (%s) is not in the log, which ends at seq %d with hash %s: records were cut from the end (or the head belongs to another log)", head, s.Records, orEmpty(s.Head))}
	}
	return s, nil
}

func orEmpty(s string) string {
	if s == "" {
		return "(empty log)"
	}
	return s
}

// scan calls f for every line (without newline) of r, numbered from 1.
func scan(r io.Reader, f func(n int, line []byte) error) error {
	rd := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(rd)
		if errors.Is(err, io.EOF) {
			return nil
		}
		var torn *tornLineError
		if errors.As(err, &torn) {
			return &BadRecordError{Line: n, Reason: err.Error(), torn: true, tornLen: torn.n}
		}
		if err != nil {
			return &BadRecordError{Line: n, Reason: err.Error()}
		}
		if err := f(n, line); err != nil {
			return err
		}
	}
}

// readLine reads one newline-terminated line of at most MaxLineBytes. A
// last line without newline is an error (a torn write, or a cut).
func readLine(rd *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLineBytes+1 {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, &tornLineError{n: int64(len(line))}
		default:
			return nil, err
		}
	}
}

// tornLineError is a last line of n bytes without newline.
type tornLineError struct{ n int64 }

func (*tornLineError) Error() string {
	return "the last line has no newline: a write did not finish, or the file was cut"
}

// claimedSeq digs the seq out of a record that does not parse, to name it.
func claimedSeq(line []byte) uint64 {
	var v struct {
		Seq uint64 `json:"seq"`
	}
	_ = json.Unmarshal(line, &v)
	return v.Seq
}

// Filter selects records for List.
type Filter struct {
	Since time.Time // records at or after; zero for all
	Tool  string    // only calls of this tool (and no changes); "" for all
	Limit int       // at most this many, the newest; 0 for all
}

// List reads the records of r that match f, oldest first, reading all of
// r (Recent reads a file from its end). It does not verify the chain
// (Verify does); a line that does not parse is an error naming it.
func List(r io.Reader, f Filter) ([]Record, error) {
	var out []Record
	err := scan(r, func(n int, line []byte) error {
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return &BadRecordError{Line: n, Reason: "not a JSON record: " + err.Error()}
		}
		if !f.match(rec) {
			return nil
		}
		out = append(out, rec)
		if f.Limit > 0 && len(out) > 2*f.Limit {
			out = append(out[:0], out[len(out)-f.Limit:]...)
		}
		return nil
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[len(out)-f.Limit:]
	}
	return out, err
}
