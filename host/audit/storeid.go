package audit

import (
	"fmt"
	"time"

	"github.com/toolhost/toolhost/store"
)

// Which store a change record accounts for.
//
// A store's change journal numbers its changes 1, 2, 3, …; a store
// deleted and made anew beside a kept log numbers from 1 again, and a
// copy restored from a backup numbers after the copy's last change again.
// A store_seq alone would then match a change of the new store to a
// record of the old one, and Reconcile would take an unrecorded change
// for recorded. So every store has a random identity made with it
// (store.Identity), change records carry it as store_id beside store_seq,
// and Reconcile matches on both:
//
//   - a record with this store's store_id accounts for this store's
//     change; one without store_id (written before identities) only for a
//     store whose identity was adopted (it existed before identities);
//     any other is another store's;
//   - at a store's first Reconcile (store.MarkJournalAnnounced), a log
//     that already holds records (but those its opens append about
//     themselves: audit_repair, audit_unchecked_start) and a store born
//     with its identity (not adopted) mean the store was deleted or replaced while the log was
//     kept: an audit_store_changed record says the log now follows this
//     store. Where Reconcile reads the log (a change pending), the newest
//     change records being another store's says the same;
//   - where Reconcile reads the log and finds this store's changes
//     recorded beyond the journal's end, the store was restored from an
//     older copy: an audit_store_restored record says so, and the pending
//     changes, whose numbers those records reuse, are recorded.

// storeSubject is the subject of the log's records about the store.
const storeSubject = "store"

// owns reports whether a change record with store_id storeID accounts for
// a change of the store id.
func owns(id store.Identity, storeID string) bool {
	return storeID == id.ID || storeID == "" && id.Adopted
}

// announce checks, at the first Reconcile of the store id, whether l was
// kept from beside another store, and says so in l if it was; it returns
// the records it appended.
func announce(l *Log, j Journal, id store.Identity) (int, error) {
	done, err := j.JournalAnnounced()
	if err != nil || done {
		return 0, err
	}
	n := 0
	if seq, _ := l.Head(); seq > 0 && !id.Adopted {
		// The records a log's open writes about itself are not records
		// made beside another store: a first start killed after making
		// the store and before the log's write-ahead file leaves a new
		// store beside a log holding only its next open's
		// audit_unchecked_start. A kill after the record but before the
		// store's mark leaves the record last: it is not written twice.
		last, err := lastBesideAStore(l.Path())
		if err != nil {
			return 0, err
		}
		if last.Seq != 0 && (last.Action != "audit_store_changed" || last.StoreID != id.ID) {
			if err := appendStoreChanged(l, id, "it is a new store, whose change journal began at 1 beside this log's earlier records: those were made beside another store (the home's store directory was deleted or replaced while this log was kept)"); err != nil {
				return 0, err
			}
			n++
		}
	}
	return n, j.MarkJournalAnnounced()
}

func appendStoreChanged(l *Log, id store.Identity, why string) error {
	_, err := l.Append(Record{Kind: KindChange, Action: "audit_store_changed", Subject: storeSubject, Actor: RecoveredActor, StoreID: id.ID,
		Detail: fmt.Sprintf("at start: this log now records the changes of the store with store_id %s: %s. "+
			"A store_seq numbers the changes of the store its record's store_id names (a record without store_id: of the store from before stores had identities)", id.ID, why)})
	return err
}

// storeSeqFound is what lastStoreSeq found.
type storeSeqFound struct {
	seq   uint64    // store_seq of the newest record of the store's changes; 0 for none
	at    time.Time // that record's time
	other bool      // a change record of another store came after it
}

// lastStoreSeq looks for the newest record of a change of the store id in
// the log at path, looking back no further than records older than stop,
// nor than the log's audit_store_changed record for id (the log follows id
// from there).
func lastStoreSeq(path string, id store.Identity, stop time.Time) (storeSeqFound, error) {
	var found storeSeqFound
	err := scanBackFile(path, func(rec Record) bool {
		switch {
		case rec.Action == "audit_store_changed" && rec.StoreID == id.ID:
			return true
		case rec.StoreSeq != 0 && owns(id, rec.StoreID):
			found.seq, found.at = rec.StoreSeq, rec.Time
			return true
		case rec.StoreSeq != 0:
			found.other = true
		}
		return rec.Time.Before(stop)
	})
	return found, err
}

// opening is the actions of the records a log's open appends about
// itself (audit.go).
var opening = map[string]bool{KindChange + " audit_repair": true, KindChange + " audit_unchecked_start": true}

// lastBesideAStore is the last record of the log at path but those its
// opens appended about itself (zero if none).
func lastBesideAStore(path string) (Record, error) {
	var last Record
	err := scanBackFile(path, func(rec Record) bool {
		if opening[rec.Kind+" "+rec.Action] {
			return false
		}
		last = rec
		return true
	})
	return last, err
}

// undone says why the newest record of the store's changes that Reconcile
// found (found) is of a change an older copy of the store put back does
// not hold ("" when it may be of one the store holds): its store_seq is
// beyond the journal's end (pending ends it), or it was written before
// the store made the change of its number — a record follows its change.
// A clock stepped back between a change and its record makes the second
// look undone too: the change is then recorded twice, never left out.
func undone(found storeSeqFound, pending []store.JournalEntry) string {
	end := pending[len(pending)-1]
	if found.seq > end.Seq {
		return fmt.Sprintf("this log records changes of this store through store_seq %d, but the store's change journal ends at %d", found.seq, end.Seq)
	}
	for _, e := range pending {
		if e.Seq == found.seq && found.at.Before(e.Time) {
			return fmt.Sprintf("this store's change %d was recorded before the store made its change %d (at %s), so that record is of another change with the same number, which the store does not hold",
				e.Seq, e.Seq, e.Time.UTC().Format(time.RFC3339Nano))
		}
	}
	return ""
}
