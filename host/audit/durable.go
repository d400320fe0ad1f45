package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Durable is what the write-ahead file beside a log says toolhost made
// durable: audit.jsonl's length, last seq and head hash at the checkpoint,
// and the ring's lines (records written since, which Open restores when a
// crash kept them out of audit.jsonl). VerifyDurable checks a log against
// it, so that records cut from the end below the checkpoint are caught
// without a head kept elsewhere.
type Durable struct {
	ck    checkpoint
	cands map[uint64][][]byte
}

// ReadDurable reads, and never writes or creates, the write-ahead file
// beside the log at logPath. It returns nil (and no error) when there is
// none, or none with a valid checkpoint: a log from a toolhost before the
// write-ahead file, or one whose file was never finished; Open then trusts
// audit.jsonl alone, and so does VerifyDurable.
//
// Read it before the log: toolhost (serve, say) may be appending, and a
// checkpoint is written only after audit.jsonl was synced through it, so
// a log read after the checkpoint holds at least what it names. The other
// way round, a checkpoint taken after the log was read could run ahead of
// it and pass for a cut.
func ReadDurable(logPath string) (*Durable, error) { return readDurable(walPath(logPath), walSize) }

func readDurable(path string, size int64) (*Durable, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	if st.Size() != size { // as openWAL: not a file Open would read
		return nil, nil
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("audit: read %s: %w", path, err)
	}
	ck, ok := newestCheckpoint(data)
	if !ok {
		return nil, nil
	}
	return &Durable{ck: ck, cands: ringCandidates(data[walRing:], ck.seq)}, nil
}

// pending counts the ring's records that continue the chain after record
// seq, whose hash is head: durable, but not in audit.jsonl yet (a crash
// kept them out); the next Open appends them.
func (d *Durable) pending(seq uint64, head string) int {
	n := 0
	for {
		_, r, ok := chainNext(d.cands, seq, head)
		if !ok {
			return n
		}
		seq, head = r.Seq, r.Hash
		n++
	}
}

// cutError is the damage of a log that ends (at seq, after records whole
// lines) below what the checkpoint says was made durable.
func (d *Durable) cutError(records, seq uint64) error {
	return &BadRecordError{Line: int(records) + 1, Reason: fmt.Sprintf(
		"records through seq %d were made durable (the write-ahead file %s%s says so), the log ends at seq %d: records were cut; restore %s from a backup",
		d.ck.seq, FileName, walSuffix, seq, FileName)}
}
