package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/signing"
)

// Recorder turns calls and changes into audit records. It is a
// host.CallObserver.
type Recorder struct {
	Log *Log
	// LogArguments keeps argument values (serve --log-arguments); without
	// it only their sha256 is recorded.
	LogArguments bool
	Logger       *slog.Logger
	// Journal is the store's change journal (journal.go): Journaled
	// records the number of each change it makes. nil: its records carry
	// none.
	Journal Journal

	// changeMu is held by Journaled from before its change to the store
	// until the change's record is durable, so that the journal's number
	// read after the change is that change's. Only Journaled takes it.
	changeMu sync.Mutex
}

var _ host.RecordKeeper = (*Recorder)(nil)

// ObserveCall appends a call record and fsyncs it before returning (see
// KeepCall, which the host calls instead, so that a record that could
// not be kept withholds the answer).
func (r *Recorder) ObserveCall(ctx context.Context, c host.CallRecord) {
	_ = r.KeepCall(ctx, c)
}

// KeepCall appends c's record and returns once it is durable, or why it
// is not (host.RecordKeeper: the call's answer is then withheld).
func (r *Recorder) KeepCall(_ context.Context, c host.CallRecord) error {
	rec := Record{
		// Time is when the record is written (the call's end), so records
		// are in time order; the call started DurationMS before.
		Kind: KindCall, Entry: string(c.Entry), Tool: c.Tool, Plugin: c.Plugin,
		ArgumentsSHA256: c.ArgumentsSHA256, Decision: c.Decision, DecidedBy: c.DecidedBy,
		Outcome: string(c.Outcome), Message: c.Message,
		DurationMS: ms(c.Duration), WaitedMS: ms(c.Waited),
	}
	if c.Digest != (signing.Digest{}) {
		rec.Digest = c.Digest.String()
	}
	if rec.Outcome == "" {
		rec.Outcome = "ok"
	}
	if r.LogArguments && json.Valid(c.Arguments) {
		rec.Arguments = c.Arguments
	}
	_, err := r.Log.Append(rec)
	if err != nil && r.Logger != nil {
		r.Logger.Error("call not audited; its answer is withheld", "tool", c.Tool, "err", err)
	}
	return err
}

// Err returns why the log refuses records, or nil (Log.Err). The Governor
// refuses calls while it is not nil: a call must be recorded before its
// answer, and a record that cannot be written is found only after the
// call ran.
func (r *Recorder) Err() error { return r.Log.Err() }

// Change appends a change record that no store change stands behind
// (approval_*; a change the store made goes through Journaled) and returns
// only once it is durable.
func (r *Recorder) Change(action, subject, detail, actor string) error {
	_, err := r.Log.Append(Record{Kind: KindChange, Action: action, Subject: subject, Detail: detail, Actor: actor})
	return err
}

func ms(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
