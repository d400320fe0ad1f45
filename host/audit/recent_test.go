package audit

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
)

// timedLog writes n records one second apart (calls of "a" and "b" and
// changes, in turn), with step(i) added to the i-th record's time, and
// returns the file's bytes and the first record's time.
func timedLog(t *testing.T, n int, step func(i int) time.Duration) ([]byte, time.Time) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	i := 0
	l.now = func() time.Time { return t0.Add(time.Duration(i)*time.Second + step(i)) }
	rec := &Recorder{Log: l}
	for ; i < n; i++ {
		switch i % 3 {
		case 0, 1:
			rec.ObserveCall(context.Background(), host.CallRecord{Tool: string(rune('a' + i%3)), Plugin: "p", Entry: host.EntryHTTP})
		default:
			if err := rec.Change("policy_set", "x", "deny", "cli"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return closeAndRead(t, l, path), t0
}

// TestRecentMatchesList: on a log in time order, reading from the end
// finds what reading all of it finds, for every filter and for chunk
// sizes that cut lines anywhere.
func TestRecentMatchesList(t *testing.T) {
	data, t0 := timedLog(t, 40, func(int) time.Duration { return 0 })
	filters := []Filter{
		{}, {Tool: "a"}, {Tool: "nosuch"}, {Limit: 3}, {Limit: 3, Tool: "b"}, {Limit: 1000},
		{Since: t0.Add(25 * time.Second)}, {Since: t0.Add(25 * time.Second), Tool: "a"},
		{Since: t0.Add(25 * time.Second), Limit: 2}, {Since: t0.Add(-time.Hour)}, {Since: t0.Add(time.Hour)},
	}
	for _, f := range filters {
		want, err := List(bytes.NewReader(data), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1, 7, 100, 333, 1 << 20} {
			got, err := recent(bytes.NewReader(data), int64(len(data)), f, chunk)
			if err != nil {
				t.Fatalf("%+v, chunk %d: %v", f, chunk, err)
			}
			if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("%+v, chunk %d: %d records, List %d", f, chunk, len(got), len(want))
			}
		}
	}
}

// TestRecentReadsTheTail: asking for the last records reads the end of
// the log, not all of it — a damaged record before them does not matter —
// and an incomplete last line (a write in progress) is left out.
func TestRecentReadsTheTail(t *testing.T) {
	data, t0 := timedLog(t, 300, func(int) time.Duration { return 0 })
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[10] = []byte("{not a record\n")
	damaged := append(bytes.Join(lines, nil), `{"seq":301,"time":"2026-11-`...)
	since := t0.Add(290 * time.Second)
	got, err := Recent(bytes.NewReader(damaged), int64(len(damaged)), Filter{Since: since})
	if err != nil || len(got) != 10 || got[0].Seq != 291 || got[9].Seq != 300 {
		t.Fatalf("since the last 10 s: %d records (%v), want seq 291-300", len(got), err)
	}
	got, err = Recent(bytes.NewReader(damaged), int64(len(damaged)), Filter{Limit: 5})
	if err != nil || len(got) != 5 || got[4].Seq != 300 {
		t.Fatalf("the last 5: %d records (%v)", len(got), err)
	}
	// All of it reaches the damaged record, and names where it is.
	_, err = Recent(bytes.NewReader(damaged), int64(len(damaged)), Filter{})
	if err == nil || !strings.Contains(err.Error(), "290 lines before its end: not a JSON record") || !strings.Contains(err.Error(), "toolhost audit verify") {
		t.Fatalf("the whole damaged log: %v", err)
	}
}

// TestRecentToleratesAClockStepBack: a record written after the wall
// clock stepped back (less than clockSlack) is still found.
func TestRecentToleratesAClockStepBack(t *testing.T) {
	data, t0 := timedLog(t, 40, func(i int) time.Duration {
		if i >= 30 {
			return -40 * time.Second // records 31-40 are stamped 40 s early
		}
		return 0
	})
	f := Filter{Since: t0.Add(29 * time.Second)}
	want, _ := List(bytes.NewReader(data), f)
	got, err := Recent(bytes.NewReader(data), int64(len(data)), f)
	if err != nil || !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Fatalf("Recent %d records (%v), List %d", len(got), err, len(want))
	}
}

// RecentFile reads the log at a path; a log not made yet has no records.
func TestRecentFile(t *testing.T) {
	if recs, err := RecentFile(filepath.Join(t.TempDir(), "none.jsonl"), Filter{}); recs != nil || err != nil {
		t.Fatalf("a missing log: %v, %v", recs, err)
	}
	path, _ := writeLog(t, 4)
	recs, err := RecentFile(path, Filter{Limit: 2})
	if err != nil || len(recs) != 2 || recs[1].Seq != 4 {
		t.Fatalf("the last 2 of 4: %+v, %v", recs, err)
	}
}
