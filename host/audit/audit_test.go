package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// writeLog appends n records (calls and changes) to a fresh log and returns
// its path and the lines written.
func writeLog(t *testing.T, n int) (string, [][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{Log: l, LogArguments: true}
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			rec.ObserveCall(context.Background(), host.CallRecord{
				Start: time.Unix(1700000000+int64(i), 0), Duration: 1500 * time.Microsecond, Entry: host.EntryHTTP,
				Tool: "delete_note", Plugin: "notes", ArgumentsSHA256: strings.Repeat("ab", 32),
				Arguments: json.RawMessage(`{"id":"<a&b>"}`), Decision: "denied", DecidedBy: "policy",
				Outcome: toolerr.CodeDenied, Message: "policy denies delete_note",
			})
		} else if err := rec.Change("policy_set", "delete_*", "deny", "cli"); err != nil {
			t.Fatal(err)
		}
	}
	lines := bytes.SplitAfter(closeAndRead(t, l, path), []byte("\n"))
	return path, lines[:len(lines)-1]
}

// closeAndRead closes l and returns the bytes of its file, path.
func closeAndRead(t *testing.T, l *Log, path string) []byte {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func verifyBytes(data []byte, head string) error {
	_, err := Verify(bytes.NewReader(data), head)
	return err
}

func TestAppendVerifyAndReopen(t *testing.T) {
	path, lines := writeLog(t, 5)
	data := bytes.Join(lines, nil)
	s, err := Verify(bytes.NewReader(data), "")
	if err != nil || s.Records != 5 {
		t.Fatalf("Verify = %+v, %v", s, err)
	}
	// The hash is sha256 of the line without its hash member: checkable
	// without toolhost.
	var last Record
	if err := json.Unmarshal(lines[4], &last); err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(strings.TrimSpace(string(lines[4])), `,"hash":"`+last.Hash+`"`, "", 1)
	if sum := sha256.Sum256([]byte(body)); hex.EncodeToString(sum[:]) != last.Hash || s.Head != last.Hash {
		t.Fatalf("hash is not sha256 of the line without hash: %s", body)
	}
	if !strings.Contains(string(lines[0]), `"arguments":{"id":"<a&b>"}`) {
		t.Errorf("argument values not kept verbatim with LogArguments: %s", lines[0])
	}
	// Reopening continues the chain.
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if seq, h := l.Head(); seq != 5 || h != last.Hash {
		t.Fatalf("reopened head = %d %s", seq, h)
	}
	r, err := l.Append(Record{Kind: KindChange, Action: "install", Subject: "notes"})
	if err != nil || r.Seq != 6 || r.Prev != last.Hash {
		t.Fatalf("append after reopen: %+v %v", r, err)
	}
	l.Close()
	data, _ = os.ReadFile(path)
	if err := verifyBytes(data, r.Hash); err != nil {
		t.Fatal(err)
	}
	// An older kept head is fine: the log grew since.
	if err := verifyBytes(data, last.Hash); err != nil {
		t.Fatalf("older head refused: %v", err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestArgumentsOnlyWhenAsked(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	(&Recorder{Log: l}).ObserveCall(context.Background(), host.CallRecord{Tool: "t", Arguments: json.RawMessage(`{"secret":"x"}`), ArgumentsSHA256: "00"})
	data, _ := os.ReadFile(l.Path())
	if bytes.Contains(data, []byte("secret")) || !bytes.Contains(data, []byte(`"arguments_sha256":"00"`)) || !bytes.Contains(data, []byte(`"outcome":"ok"`)) {
		t.Fatalf("record: %s", data)
	}
}

func TestVerifyNamesFirstBadRecord(t *testing.T) {
	_, lines := writeLog(t, 6)
	join := func(ls ...[]byte) []byte { return bytes.Join(ls, nil) }
	changed := bytes.Clone(lines[2])
	changed[bytes.Index(changed, []byte("delete_note"))] ^= 0x01 // one byte of record 3
	forged := bytes.Clone(lines[3])
	tests := []struct {
		name     string
		data     []byte
		wantLine int
		want     string
	}{
		{"changed byte", join(lines[0], lines[1], changed, lines[3], lines[4], lines[5]), 3, "does not match its hash"},
		{"deleted", join(lines[0], lines[1], lines[3], lines[4], lines[5]), 3, "seq 4 follows seq 2"},
		{"deleted first", join(lines[1:]...), 1, "seq 2 follows seq 0"},
		{"inserted copy", join(lines[0], lines[1], lines[2], lines[2], lines[3], lines[4], lines[5]), 4, "seq 3 follows seq 3"},
		{"reordered", join(lines[0], lines[2], lines[1], lines[3], lines[4], lines[5]), 2, "seq 3 follows seq 1"},
		{"inserted forged", join(lines[0], lines[1], lines[2], forged, lines[3]), 5, "seq 4 follows seq 4"},
		{"garbage line", join(lines[0], []byte("hello\n"), lines[1]), 2, "not a valid audit record"},
		{"torn last line", join(lines[0], lines[1][:10]), 2, "no newline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := verifyBytes(tc.data, "")
			var bad *BadRecordError
			if !errors.As(err, &bad) || bad.Line != tc.wantLine || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a bad record at line %d saying %q", err, tc.wantLine, tc.want)
			}
		})
	}
}

func TestVerifyHeadCatchesTruncation(t *testing.T) {
	_, lines := writeLog(t, 4)
	var head Record
	_ = json.Unmarshal(lines[3], &head)
	cut := bytes.Join(lines[:3], nil)
	if err := verifyBytes(cut, ""); err != nil {
		t.Fatalf("without --head a cut log is intact (the limit): %v", err)
	}
	err := verifyBytes(cut, head.Hash)
	var bad *BadRecordError
	if !errors.As(err, &bad) || bad.Line != 4 || !strings.Contains(err.Error(), "cut from the end") {
		t.Fatalf("err = %v", err)
	}
	if err := verifyBytes(nil, head.Hash); err == nil {
		t.Fatal("an emptied log passes with a head")
	}
}

func TestOpenCutsTornLastLine(t *testing.T) {
	path, lines := writeLog(t, 2)
	if err := os.WriteFile(path, append(bytes.Join(lines, nil), lines[1][:20]...), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	data, _ := os.ReadFile(path)
	s, err := Verify(bytes.NewReader(data), "")
	if err != nil || s.Records != 3 || !bytes.Contains(data, []byte(`"action":"audit_repair"`)) {
		t.Fatalf("after repair: %+v %v\n%s", s, err, data)
	}
	// A damaged last record is not silently built upon.
	bad := bytes.Clone(data)
	bad[len(bad)-5] ^= 1
	os.WriteFile(path, bad, 0o600)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("Open on a damaged last record: %v", err)
	}
}

func TestList(t *testing.T) {
	_, lines := writeLog(t, 6)
	data := bytes.Join(lines, nil)
	calls, err := List(bytes.NewReader(data), Filter{Tool: "delete_note"})
	if err != nil || len(calls) != 3 {
		t.Fatalf("tool filter: %d records, %v", len(calls), err)
	}
	recent, _ := List(bytes.NewReader(data), Filter{Since: time.Unix(1700000003, 0)})
	for _, r := range recent {
		if r.Time.Before(time.Unix(1700000003, 0)) {
			t.Errorf("record before since: %+v", r)
		}
	}
	last2, _ := List(bytes.NewReader(data), Filter{Limit: 2})
	if len(last2) != 2 || last2[1].Seq != 6 {
		t.Errorf("limit: %+v", last2)
	}
}

// A write that fails makes the log refuse records, and Err says so (the
// Governor refuses calls on it); closing does too. The failure is a real
// one: the log's file descriptor swapped for a read-only one.
func TestErrReportsARefusingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(Record{Kind: KindChange, Action: "install", Subject: "x"}); err != nil || l.Err() != nil {
		t.Fatalf("append: %v, Err %v", err, l.Err())
	}
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l.syncMu.Lock()
	rw := l.f
	l.f = ro
	l.syncMu.Unlock()
	_, aerr := l.Append(Record{Kind: KindChange, Action: "remove", Subject: "x"})
	l.syncMu.Lock()
	l.f = rw
	l.syncMu.Unlock()
	ro.Close()
	if aerr == nil || l.Err() == nil || !strings.Contains(l.Err().Error(), "refuses further records") {
		t.Fatalf("after a failed write: append %v, Err %v", aerr, l.Err())
	}
	rec := &Recorder{Log: l}
	if rec.Err() == nil {
		t.Fatal("Recorder.Err is nil for a refusing log")
	}
	l2, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if l2.Err() == nil {
		t.Fatal("Err is nil after Close")
	}
}
