package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// clockSlack is how far past the first record older than Filter.Since
// Recent goes on reading: records are written in time order (their time
// is taken under the log's lock, with their seq), so only a wall clock
// stepped back could put an older time after a newer one.
const clockSlack = time.Minute

// recentChunk is how much Recent reads at a time, from the end backwards.
const recentChunk = 64 << 10

// Recent returns what List returns for the log in r (size bytes long),
// reading it from its end backwards: it stops once it has filt.Limit
// matching records or has passed the records older than filt.Since (by
// clockSlack), so asking for the last minute of a log of gigabytes reads
// the last minute. An incomplete last line (a write in progress) is left
// out. It does not verify the chain (Verify does).
func Recent(r io.ReaderAt, size int64, filt Filter) ([]Record, error) {
	return recent(r, size, filt, recentChunk)
}

// RecentFile is Recent on the log at path; a log not made yet has no
// records.
func RecentFile(path string, filt Filter) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Recent(f, st.Size(), filt)
}

func recent(r io.ReaderAt, size int64, filt Filter, chunk int) ([]Record, error) {
	var out []Record // newest first
	stop := time.Time{}
	if !filt.Since.IsZero() {
		stop = filt.Since.Add(-clockSlack)
	}
	err := scanBack(r, size, chunk, func(rec Record) bool {
		if !stop.IsZero() && rec.Time.Before(stop) {
			return true
		}
		if filt.match(rec) {
			out = append(out, rec)
		}
		return filt.Limit > 0 && len(out) >= filt.Limit
	})
	if err != nil {
		return nil, err
	}
	return reverse(out), nil
}

// scanBackFile is scanBack on the log at path.
func scanBackFile(path string, each func(Record) (done bool)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return scanBack(f, st.Size(), recentChunk, each)
}

// scanBack reads the log in r (size bytes long) from its end backwards,
// chunk bytes at a time, and hands each complete record to each, newest
// first, until each says it is done. An incomplete last line (a write in
// progress) is left out. It does not verify the chain (Verify does).
func scanBack(r io.ReaderAt, size int64, chunk int, each func(Record) (done bool)) error {
	var (
		carry []byte // the start of the file's unread part ends with this line's beginning
		back  int    // complete lines read, counted from the end
	)
	line1 := func(line []byte) (done bool, err error) {
		back++
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return true, fmt.Errorf("audit log broken %d lines before its end: not a JSON record: %v; `toolhost audit verify` names the damaged line", back, err)
		}
		return each(rec), nil
	}
	torn := true // what is read until the last newline is an incomplete last line
	for pos := size; pos > 0; {
		n := int64(chunk)
		if n > pos {
			n = pos
		}
		pos -= n
		buf := make([]byte, int(n), int(n)+len(carry))
		if _, err := r.ReadAt(buf, pos); err != nil && err != io.EOF {
			return err
		}
		data := append(buf, carry...)
		if torn {
			// Leave out what follows the last newline: a line still being
			// written, or torn by a crash (Open repairs it; Verify names it).
			i := bytes.LastIndexByte(data, '\n')
			data = data[:i+1]
			torn = i < 0
		}
		// data ends with a newline (or is empty); its lines are complete
		// but the first, unless pos is 0.
		end := len(data)
		for end > 0 {
			i := bytes.LastIndexByte(data[:end-1], '\n')
			if i < 0 && pos > 0 {
				break // the line continues in the part not read yet
			}
			line := data[i+1 : end-1]
			end = i + 1
			if len(line) == 0 {
				continue
			}
			done, err := line1(line)
			if err != nil || done {
				return err
			}
		}
		carry = append(carry[:0:0], data[:end]...)
		if len(carry) > MaxLineBytes+1 {
			return fmt.Errorf("audit log broken %d lines before its end: a line longer than %d bytes; `toolhost audit verify` names the damaged line", back+1, MaxLineBytes)
		}
	}
	return nil
}

func (f Filter) match(rec Record) bool {
	return (f.Since.IsZero() || !rec.Time.Before(f.Since)) && (f.Tool == "" || rec.Tool == f.Tool)
}

func reverse(recs []Record) []Record {
	for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
		recs[i], recs[j] = recs[j], recs[i]
	}
	return recs
}
