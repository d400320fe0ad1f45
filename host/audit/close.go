package audit

import "errors"

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
