package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A log that toolhost has kept must not vanish into a fresh start. The
// caller knows whether one was kept (toolhost: the home's store existed
// before this open, and the log is created before the store ever is —
// Create), and says so by opening with OpenKept:
//
//   - a missing audit.jsonl is ErrLogMissing, whatever the write-ahead
//     file's state: Open would create an empty log, and a history deleted
//     with its write-ahead file would pass for a new home;
//   - an audit.jsonl without records and without a valid write-ahead
//     checkpoint is how an operator begins a new log knowingly (the
//     refusal says how): the log's first record is then an
//     audit_unchecked_start change saying it began empty where a log had
//     been kept.

// Create makes an empty log at path, durably (the file, then its
// directory entry), unless something is already there, which it leaves
// alone. toolhost calls it before it first creates the store beside the
// log, so that a store without a log can only mean the log was removed,
// never a crash between creating the one and the other.
func Create(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: create %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("audit: create %s: %w", path, err)
	}
	return nil
}

// OpenKept is Open for a log that toolhost has kept before; why says how
// the caller knows ("the home's store … already existed"), for the
// messages. It never creates audit.jsonl: a missing one is an error
// wrapping ErrLogMissing (MissingError), and nothing is written. An
// audit.jsonl without records and without a valid write-ahead checkpoint
// opens with an audit_unchecked_start record saying the log began empty
// where one had been kept.
func OpenKept(path, why string) (*Log, error) {
	if why == "" {
		return nil, errors.New("audit: OpenKept needs the reason a log was kept")
	}
	return openLog(path, why, walSize, nil)
}

// MissingError is the ErrLogMissing for a log at path that does not
// exist although toolhost kept one there (why says how the caller knows):
// what was found, the write-ahead file's state included, and the two ways
// on — restore it, or begin a new log knowingly.
func MissingError(path, why string) error {
	return fmt.Errorf("%w: %s does not exist, but %s, so toolhost kept a log there: it was deleted or moved, and %s. "+
		"toolhost does not begin a new log on its own: restore %s and %s%s together from a backup, then check them with `toolhost audit verify --head` and a head you kept; "+
		"or, to begin a new log knowingly, move %s%s aside if it is there and create an empty %s (touch %s): "+
		"the next command that opens the store starts the new log with an audit_unchecked_start record saying it began empty where a log had been kept",
		ErrLogMissing, path, why, walState(path),
		FileName, FileName, walSuffix, FileName, walSuffix, FileName, path)
}

// walState says what is left of the write-ahead file beside a missing
// log at logPath. It only reads.
func walState(logPath string) string {
	name := FileName + walSuffix
	if _, err := os.Lstat(walPath(logPath)); errors.Is(err, os.ErrNotExist) {
		return name + " is gone too"
	}
	d, err := ReadDurable(logPath)
	switch {
	case err != nil:
		return fmt.Sprintf("%s is there but cannot be read (%v)", name, err)
	case d == nil:
		return name + " is there but holds no valid checkpoint"
	case d.ck.seq == 0:
		return name + " is still there and says the log held no records when toolhost last made it durable"
	}
	return fmt.Sprintf("%s is still there and says toolhost made records through seq %d durable", name, d.ck.seq)
}

// uncheckedEmpty is the detail of the audit_unchecked_start record of a
// kept log opened without records and without a write-ahead checkpoint.
func uncheckedEmpty(why string) string {
	return fmt.Sprintf("%s held no records and there was no valid write-ahead file %s%s, but %s, so toolhost had kept a log here: "+
		"this log began empty in its place (an operator created an empty %s to begin a new log knowingly after the old one was lost or moved aside, "+
		"or the first start in this home stopped before its write-ahead file was made); what the log held before this record cannot be checked here "+
		"(`toolhost audit verify --head` with a head kept elsewhere can tell that this is not that log)",
		FileName, FileName, walSuffix, why, FileName)
}

// syncDir makes dir's entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
