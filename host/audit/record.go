package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/strictjson"
)

// MaxLineBytes bounds one record; longer lines are refused by the parser
// (and never written: Append truncates argument values to fit).
const MaxLineBytes = 256 << 10

// Record kinds.
const (
	KindCall   = "call"
	KindChange = "change"
)

// Record is one audit record. Call records fill the call fields, change
// records Action, Subject and Detail.
type Record struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Prev is the hash of the record before; "" for the first record.
	Prev string `json:"prev"`
	Kind string `json:"kind"`

	// Calls.
	Entry           string          `json:"entry,omitempty"`
	Tool            string          `json:"tool,omitempty"`
	Plugin          string          `json:"plugin,omitempty"`
	Digest          string          `json:"digest,omitempty"`
	ArgumentsSHA256 string          `json:"arguments_sha256,omitempty"`
	Arguments       json.RawMessage `json:"arguments,omitempty"` // only with serve --log-arguments
	Decision        string          `json:"decision,omitempty"`
	DecidedBy       string          `json:"decided_by,omitempty"`
	Outcome         string          `json:"outcome,omitempty"` // "ok" or the error code
	Message         string          `json:"message,omitempty"`
	DurationMS      float64         `json:"duration_ms,omitempty"`
	WaitedMS        float64         `json:"waited_ms,omitempty"`

	// Changes: install, remove, trust_add, trust_remove, trust_revoke,
	// trust_unrevoke, trust_threshold, policy_set, policy_unset,
	// config_set, secret_set, secret_remove, approval_approve,
	// approval_deny, approval_timeout; the log's own: audit_repair,
	// audit_unchecked_start, audit_journal_gap, audit_store_changed,
	// audit_store_restored (journal.go).
	Action  string `json:"action,omitempty"`
	Subject string `json:"subject,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Actor   string `json:"actor,omitempty"`
	// StoreSeq is the store's change journal number of the change the
	// record accounts for (store.JournalEntry.Seq), for changes the store
	// made; 0 (left out) otherwise. See journal.go.
	StoreSeq uint64 `json:"store_seq,omitempty"`
	// StoreID is the identity of the store whose change journal StoreSeq
	// numbers (store.Identity.ID), on the records of its changes and on
	// the log's own records about that store; "" (left out) otherwise,
	// and on records written before stores had identities. See journal.go.
	StoreID string `json:"store_id,omitempty"`

	Hash string `json:"hash"`
}

var recordShape = strictjson.Object{
	"seq": strictjson.Any{}, "time": strictjson.Any{}, "prev": strictjson.Any{}, "kind": strictjson.Any{},
	"entry": strictjson.Any{}, "tool": strictjson.Any{}, "plugin": strictjson.Any{}, "digest": strictjson.Any{},
	"arguments_sha256": strictjson.Any{}, "arguments": strictjson.Any{}, "decision": strictjson.Any{},
	"decided_by": strictjson.Any{}, "outcome": strictjson.Any{}, "message": strictjson.Any{},
	"duration_ms": strictjson.Any{}, "waited_ms": strictjson.Any{},
	"action": strictjson.Any{}, "subject": strictjson.Any{}, "detail": strictjson.Any{}, "actor": strictjson.Any{},
	"store_seq": strictjson.Any{}, "store_id": strictjson.Any{}, "hash": strictjson.Any{},
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseLine parses one line of the log and checks that the record is intact
// on its own: strict JSON, canonical encoding, and a hash that matches.
// Whether it fits the chain is Verify's business.
func ParseLine(line []byte) (Record, error) {
	var r Record
	if len(line) > MaxLineBytes {
		return r, fmt.Errorf("line is %d bytes, the limit is %d", len(line), MaxLineBytes)
	}
	if err := strictjson.Decode(line, recordShape, &r); err != nil {
		return Record{}, fmt.Errorf("not a valid audit record: %v", err)
	}
	if !hashRE.MatchString(r.Hash) {
		return Record{}, fmt.Errorf("hash %q is not 64 lowercase hex digits", truncate(r.Hash))
	}
	if r.Prev != "" && !hashRE.MatchString(r.Prev) {
		return Record{}, fmt.Errorf("prev %q is not 64 lowercase hex digits", truncate(r.Prev))
	}
	want, hash, err := encode(r)
	if err != nil {
		return Record{}, fmt.Errorf("cannot re-encode the record: %v", err)
	}
	if hash != r.Hash {
		return Record{}, fmt.Errorf("its content does not match its hash (changed after it was written)")
	}
	if !bytes.Equal(want, line) {
		return Record{}, fmt.Errorf("it is not in canonical form (changed after it was written)")
	}
	return r, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		n := 80
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n] + "…"
	}
	return s
}

// validStrings replaces each run of invalid UTF-8 in r's strings with
// U+FFFD. Those strings come from outside (a tool name in a URL, a
// plugin's error message), and the line must read back as written:
// encoding/json writes an invalid byte as the escape \ufffd, which parses
// to U+FFFD, which encodes as itself — a line whose hash verification
// could never match (TestAnyBytesInAnyFieldVerifyAndReopen).
func validStrings(r *Record) {
	for _, p := range stringsOf(r) {
		if !utf8.ValidString(*p) {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
		}
	}
}

// stringsOf is every string of r that its writer chose (all but Prev and
// Hash, which the log sets).
func stringsOf(r *Record) [15]*string {
	return [...]*string{
		&r.Kind, &r.Entry, &r.Tool, &r.Plugin, &r.Digest, &r.ArgumentsSHA256,
		&r.Decision, &r.DecidedBy, &r.Outcome, &r.Message,
		&r.Action, &r.Subject, &r.Detail, &r.Actor, &r.StoreID,
	}
}
