package audit

import (
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/store"
)

// Changes the store made that the log does not record.
//
// A change is made in the store first (one synced transaction) and its
// record appended after: a process killed between the two leaves the
// change in effect with no record, and a log that verifies. The store
// therefore journals every change in the change's own transaction
// (store/journal.go), and the records of changes carry the journal's
// number of their change (store_seq) and the store's identity (store_id,
// storeid.go):
//
//   - Recorder.Journaled makes a change and appends its record under one
//     lock, so the journal's number read after the change is that
//     change's, then marks the journal recorded through it;
//   - Reconcile, where the process that holds the store opens the log
//     and before it serves anything, appends a record for each journaled
//     change above that mark that the log does not hold, marked as
//     recovered, with its store_seq.
//
// What it does not do: tell who made a recovered change (its actor is
// toolhost), or recover changes that fell out of the journal's window
// (the last 64; Reconcile records that a gap is there). A change is
// refused while the log refuses records, so a running process leaves at
// most the one change it was making unrecorded.

// Journal is the store's change journal as the Recorder and Reconcile use
// it: *store.Store.
type Journal interface {
	Identity() store.Identity
	JournalSeq() (uint64, error)
	JournalSince(seq uint64) ([]store.JournalEntry, error)
	JournalRecorded() (uint64, error)
	MarkJournalRecorded(seq uint64) error
	JournalAnnounced() (bool, error)
	MarkJournalAnnounced() error
}

var _ Journal = (*store.Store)(nil)

// RecoveredActor is the actor of a recovered change record.
const RecoveredActor = "toolhost"

// Journaled makes a change to the store and records it. change makes it
// (adding at most one entry to the store's change journal) and says how
// to record it; an empty action records nothing unless the store changed
// (the change found nothing to do).
//
// Journaled holds a lock shared by every Journaled call of r from before
// change until the record is durable, so the journal's number after
// change is change's own, recorded as store_seq; then it marks the
// journal recorded through it (a failed mark costs the next start a look
// at the log's end, nothing more). A change is recorded when change
// succeeded, or when it failed after the store made it (the journal
// moved): then the detail says so and change's error is returned. While
// the log refuses records no change is made: it could not be recorded.
func (r *Recorder) Journaled(actor string, change func() (action, subject, detail string, err error)) error {
	r.changeMu.Lock()
	defer r.changeMu.Unlock()
	if err := r.Log.Err(); err != nil {
		return fmt.Errorf("nothing was changed: toolhost records every change in its audit log, and the log takes no more records (%w); if a write failed, fix its cause (free disk space, check the home's files) and restart toolhost", err)
	}
	before, berr := r.journalSeq()
	action, subject, detail, err := change()
	after, aerr := r.journalSeq()
	stored := berr == nil && aerr == nil && after > before
	if !stored && (err != nil || action == "") {
		return err
	}
	rec := Record{Kind: KindChange, Action: action, Subject: subject, Detail: detail, Actor: actor}
	if stored {
		rec.StoreSeq, rec.StoreID = after, r.Journal.Identity().ID
	}
	if err != nil {
		sep := ""
		if rec.Detail != "" {
			sep = "; "
		}
		rec.Detail += sep + "made in the store, but then: " + err.Error()
	}
	if _, werr := r.Log.Append(rec); werr != nil {
		return errors.Join(err, fmt.Errorf("%s %s done, but not recorded in the audit log: %w", action, subject, werr))
	}
	if stored {
		if merr := r.Journal.MarkJournalRecorded(after); merr != nil && r.Logger != nil {
			r.Logger.Warn("audit: the store's change journal was not marked recorded; the next start checks the log's end", "store_seq", after, "err", merr)
		}
	}
	return err
}

func (r *Recorder) journalSeq() (uint64, error) {
	if r.Journal == nil {
		return 0, errors.New("audit: no journal")
	}
	return r.Journal.JournalSeq()
}

// Reconcile appends a record for every change in j that l does not
// record, and returns how many it appended. Call it where the process
// that holds the store opens the log, before anything is served.
//
// Records are matched to changes by (store_id, store_seq): the journal
// numbers each store's changes from 1, so a number alone would match a
// change of a new store to a record of the store deleted before it
// (storeid.go). At a store's first Reconcile, a log that already holds
// records gets an audit_store_changed record saying it now follows this
// store (announce).
//
// Only the entries above j's recorded mark are looked at (none, unless a
// process stopped between a change and its mark). For those, the log is
// read from its end back to the first such change's time (by clockSlack):
// the last record there of this store's changes with a store_seq says
// through which change the log records them; a log with none there (one
// that recorded no journaled change of this store since, an older log
// before store_seq) records none of them. A journal with nothing above
// its mark (a new home, a store from before the journal, a log begun anew
// by hand) reads nothing more.
func Reconcile(l *Log, j Journal) (int, error) {
	id := j.Identity()
	n, err := announce(l, j, id)
	if err != nil {
		return n, fmt.Errorf("audit: check the store's changes against the log: %w", err)
	}
	mark, err := j.JournalRecorded()
	if err != nil {
		return n, fmt.Errorf("audit: check the store's changes against the log: %w", err)
	}
	pending, err := j.JournalSince(mark)
	if err != nil || len(pending) == 0 {
		if err != nil {
			err = fmt.Errorf("audit: check the store's changes against the log: %w", err)
		}
		return n, err
	}
	found, err := lastStoreSeq(l.Path(), id, pending[0].Time.Add(-clockSlack))
	if err != nil {
		return n, fmt.Errorf("audit: check the store's changes against %s: %w", l.Path(), err)
	}
	if found.other {
		if err := appendStoreChanged(l, id, "the change records before this one that carry a store_seq, back to this store's last, are of another store (its store directory was put in place of this one, or this one in place of it)"); err != nil {
			return n, err
		}
		n++
	}
	last := found.seq
	if why := undone(found, pending); why != "" {
		if _, err := l.Append(Record{Kind: KindChange, Action: "audit_store_restored", Subject: storeSubject, Actor: RecoveredActor, StoreID: id.ID,
			Detail: fmt.Sprintf("at start: %s: the store was restored from an older copy (a backup of its directory with its key and seal). "+
				"The changes recorded before this record with store_seq above the copy's last change are not in effect; the store numbers its changes after the copy's again, so store_seq values repeat: a record accounts for the change of its store_id and store_seq made last before it", why)}); err != nil {
			return n, err
		}
		n++
		last = 0 // the records found are of changes the copy does not hold
	}
	if first := pending[0].Seq; first > mark+1 && first > last+1 {
		from := max(mark, last) + 1
		if _, err := l.Append(Record{Kind: KindChange, Action: "audit_journal_gap", Subject: FileName, Actor: RecoveredActor, StoreID: id.ID,
			Detail: fmt.Sprintf("recovered at start: the store made changes %d to %d, which this log does not record and the store's change journal no longer holds (it keeps the last 64): what they were cannot be told here", from, first-1)}); err != nil {
			return n, err
		}
		n++
	}
	for _, e := range pending {
		if e.Seq <= last {
			continue
		}
		detail := fmt.Sprintf("recovered at start: made in the store at %s but not recorded before toolhost stopped: %s",
			e.Time.UTC().Format(time.RFC3339Nano), e.Description)
		if _, err := l.Append(Record{Kind: KindChange, Action: e.Action, Subject: e.Subject, Detail: detail, Actor: RecoveredActor, StoreSeq: e.Seq, StoreID: id.ID}); err != nil {
			return n, err
		}
		n++
	}
	if err := j.MarkJournalRecorded(pending[len(pending)-1].Seq); err != nil {
		return n, fmt.Errorf("audit: %w", err)
	}
	return n, nil
}
