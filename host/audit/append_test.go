package audit

import (
	"bytes"
	"context"
	"encoding/json"
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
)

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
