package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

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

// TestConcurrentAppendsShareFsyncs: appends from many goroutines each
// return only once an fsync that covers their record has ended, the
// chain stays whole, and fsyncs are shared (group commit) rather than
// one per record under the lock.
func TestConcurrentAppendsShareFsyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var syncs atomic.Int64
	l.fsync = func(f *os.File) error {
		syncs.Add(1)
		time.Sleep(2 * time.Millisecond) // a disk's fsync: others append meanwhile
		return f.Sync()
	}
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for range writers {
		wg.Go(func() {
			for range each {
				r, err := l.Append(Record{Kind: KindChange, Action: "install", Subject: "notes"})
				if err != nil {
					errs <- err
					return
				}
				if synced := l.synced.Load(); synced < r.Seq {
					errs <- fmt.Errorf("Append of record %d returned before it was fsynced (synced through %d)", r.Seq, synced)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l.Close()
	data, _ := os.ReadFile(path)
	s, err := Verify(bytes.NewReader(data), "")
	if err != nil || s.Records != writers*each {
		t.Fatalf("Verify = %+v, %v; want %d records", s, err, writers*each)
	}
	if n := syncs.Load(); n >= writers*each {
		t.Fatalf("%d fsyncs for %d concurrent appends: none shared", n, writers*each)
	}
}

// BenchmarkAppend measures one call record appended and fsync'd (the cost
// every call pays before its answer).
func BenchmarkAppend(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := &Recorder{Log: l}
	r := host.CallRecord{Entry: host.EntryHTTP, Tool: "get_current_time", Plugin: "time", ArgumentsSHA256: strings.Repeat("ab", 32), Duration: time.Millisecond}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec.ObserveCall(context.Background(), r)
	}
}

// BenchmarkAppendParallel: 8 concurrent callers (serve under 8 clients);
// their appends share fsyncs, so the time per record is below one fsync.
func BenchmarkAppendParallel(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := &Recorder{Log: l}
	r := host.CallRecord{Entry: host.EntryHTTP, Tool: "get_current_time", Plugin: "time", ArgumentsSHA256: strings.Repeat("ab", 32), Duration: time.Millisecond}
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec.ObserveCall(context.Background(), r)
		}
	})
}

// A record whose caller-chosen fields are huge (a tool name that does not
// exist, JSON-escaped six times its size) is shortened, not written as a
// line that the next Open refuses as damaged.
func TestOversizedRecordIsShortenedAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat(`\"`, 60_000)
	r, err := l.Append(Record{Kind: KindCall, Tool: name, Message: "no tool named " + name})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if !strings.Contains(r.Message, "fields shortened") || len(r.Tool) > 100 {
		t.Fatalf("record not shortened: tool %d bytes, message %.100q", len(r.Tool), r.Message)
	}
	l.Close()
	l, err = Open(path)
	if err != nil {
		t.Fatalf("reopen after an oversized record: %v", err)
	}
	l.Close()
	f, _ := os.Open(path)
	defer f.Close()
	if s, err := Verify(f, ""); err != nil || s.Records != 1 {
		t.Fatalf("Verify = %+v, %v", s, err)
	}
}

// TestGroupWaitsForRunningCalls: with Group, the appender leading an fsync
// waits while calls in flight have not appended yet, so the records of calls that end
// together share one fsync; the wait ends as soon as none is running (the
// delay bound is an hour here: a wait that did not end on that would hang).
func TestGroupWaitsForRunningCalls(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var syncs atomic.Int64
	l.fsync = func(f *os.File) error { syncs.Add(1); return datasync(f) }
	const calls = 6
	var returned atomic.Int64
	l.Group(func() int { return calls - int(returned.Load()) }, time.Hour)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if _, err := l.Append(Record{Kind: KindCall, Tool: "echo"}); err != nil {
				t.Error(err)
			}
			returned.Add(1)
		})
	}
	wg.Wait()
	if n := syncs.Load(); n != 1 {
		t.Fatalf("%d fsyncs for %d calls ending together, want 1", n, calls)
	}
	// A lone call (nothing else running) does not wait.
	l.Group(func() int { return 1 }, time.Hour) // itself
	if _, err := l.Append(Record{Kind: KindCall, Tool: "echo"}); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs after a lone call, want 2", n)
	}
}

// TestGroupDelayIsBounded: a call that keeps running (a slow tool) holds
// the others' answers back by at most the delay.
func TestGroupDelayIsBounded(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Group(func() int { return 2 }, time.Millisecond) // itself and a slow call
	for range 3 {
		if _, err := l.Append(Record{Kind: KindCall, Tool: "echo"}); err != nil {
			t.Fatal(err)
		}
	}
	if seq, _ := l.Head(); seq != 3 {
		t.Fatalf("head %d, want 3", seq)
	}
}

// TestCloseRacingAppendsAgreesWithTheFile: appends that race Close either
// return their record, which is then in the file, or an error, and then
// their record is not in it. Before, an append whose record Close had made
// durable could still fail (it then synced a closed file).
func TestCloseRacingAppendsAgreesWithTheFile(t *testing.T) {
	for round := range 30 {
		path := filepath.Join(t.TempDir(), FileName)
		l, err := open(path, 1<<16, func(*os.File) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu       sync.Mutex
			returned = map[string]bool{}
			started  sync.WaitGroup
			wg       sync.WaitGroup
		)
		started.Add(8)
		for g := range 8 {
			wg.Go(func() {
				started.Done()
				for i := range 40 {
					subject := fmt.Sprintf("g%d-%d", g, i)
					_, err := l.Append(Record{Kind: KindChange, Action: "test", Subject: subject})
					mu.Lock()
					returned[subject] = err == nil
					mu.Unlock()
					if err != nil {
						if !strings.Contains(err.Error(), "closed") {
							t.Errorf("round %d: append %s: %v, want the log-closed error", round, subject, err)
						}
						return
					}
				}
			})
		}
		started.Wait()
		if err := l.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		wg.Wait()
		if err := l.Close(); err != nil {
			t.Errorf("round %d: a second close: %v", round, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		inFile := map[string]bool{}
		for line := range bytes.Lines(data) { // none when Close came first
			line = bytes.TrimSuffix(line, []byte("\n"))
			r, err := ParseLine(line)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			inFile[r.Subject] = true
		}
		for subject, ok := range returned {
			if ok != inFile[subject] {
				t.Errorf("round %d: record %s: Append returned ok=%v, in the file: %v", round, subject, ok, inFile[subject])
			}
		}
	}
}

// Every string a record carries can come from outside (a tool name in a
// URL, a plugin's error message, argument values): whatever bytes they hold,
// the line written must verify and reopen — a record that does not is a log
// the host refuses to start on. Invalid UTF-8 is written as U+FFFD (the
// character, not its escape, which would hash differently from the line
// that verification rebuilds); argument values the parser would refuse are
// left out, and the message says so.
func TestAnyBytesInAnyFieldVerifyAndReopen(t *testing.T) {
	hostile := []string{"\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ok\u2028\u2029\x00\x1f\"\\", "\xef\xbf\xbd",
		strings.Repeat("é", MaxLineBytes/2) + "\xff"}
	args := map[string]bool{ // argument values → kept
		"{\"a\":\"\xff\"}": false, `{"a":"\ud800"}`: false, `{"a":"\udc00x"}`: false, `{"a":1,"a":2}`: false,
		`["x",1e999]`: true, `{"\ud83d\ude00":"\u0041"}`: true, `[` + strings.Repeat(`"\u00e9",`, 40_000) + `1]`: false,
	}
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range hostile {
		for _, r := range []Record{
			{Kind: KindCall, Tool: s, Plugin: s, Digest: s, Entry: s, ArgumentsSHA256: s, Decision: s, DecidedBy: s, Outcome: s, Message: s},
			{Kind: KindChange, Action: s, Subject: s, Detail: s, Actor: s},
			{Kind: s},
		} {
			if _, err := l.Append(r); err != nil {
				t.Fatalf("append %.40q: %v", s, err)
			}
			n++
		}
	}
	for a, kept := range args {
		r, err := l.Append(Record{Kind: KindCall, Tool: "t", Arguments: json.RawMessage(a)})
		if err != nil {
			t.Fatalf("append arguments %.40q: %v", a, err)
		}
		n++
		if got := r.Arguments != nil; got != kept || (!kept && !strings.Contains(r.Message, "argument values left out")) {
			t.Errorf("arguments %.40q: kept %v (want %v), message %q", a, got, kept, r.Message)
		}
	}
	data := closeAndRead(t, l, path)
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if _, err := ParseLine(line); err != nil {
			t.Errorf("line %d %.200q: %v", i+1, line, err)
		}
		if !utf8.Valid(line) {
			t.Errorf("line %d is not valid UTF-8: %.200q", i+1, line)
		}
	}
	if s, err := Verify(bytes.NewReader(data), ""); err != nil || s.Records != uint64(n) {
		t.Fatalf("Verify = %+v, %v; want %d records", s, err, n)
	}
	l, err = Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	l.Close()
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
