package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"sort"
	"testing"
	"time"
)

// FuzzVerify feeds arbitrary bytes to the parser and verifier: they never
// panic, every failure names a line, and whatever verifies re-verifies
// after being parsed and encoded again.
func FuzzVerify(f *testing.F) {
	l, _ := Open(f.TempDir() + "/" + FileName)
	l.Append(Record{Kind: KindCall, Tool: "t", Outcome: "ok", DurationMS: 1.5})
	l.Append(Record{Kind: KindChange, Action: "install", Subject: "x"})
	l.Append(Record{Kind: KindChange, Action: "remove", Subject: "x", StoreSeq: 7})
	l.Append(Record{Kind: KindChange, Action: "remove", Subject: "y", StoreSeq: 8, StoreID: "0123456789abcdef0123456789abcdef"})
	l.Close()
	seed, _ := readAll(l.Path())
	f.Add(seed)
	f.Add([]byte(`{"seq":1}` + "\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Verify(bytes.NewReader(data), "")
		if err != nil {
			var bad *BadRecordError
			if !errors.As(err, &bad) || bad.Line < 1 {
				t.Fatalf("error does not name a line: %v", err)
			}
			return
		}
		var again []byte
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			r, err := ParseLine(bytes.TrimSuffix(line, []byte("\n")))
			if err != nil {
				t.Fatalf("verified, yet a line does not parse: %v", err)
			}
			enc, _, _ := encode(r)
			again = append(append(again, enc...), '\n')
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("verified log is not canonical:\n%q\n%q", data, again)
		}
		if s.Records > 0 {
			if _, err := Verify(bytes.NewReader(data), s.Head); err != nil {
				t.Fatalf("own head refused: %v", err)
			}
		}
	})
}

func readAll(path string) ([]byte, error) { return os.ReadFile(path) }

// FuzzEncodeMatchesJSON holds encode's direct encoder to encoding/json:
// for any record, the same hashed body (or both refusing it).
func FuzzEncodeMatchesJSON(f *testing.F) {
	f.Add(uint64(1), int64(1764000000), int64(123456789), "", "call", "http", "echo", "ok", "a\"b\\c\x00\x1f\u2028\u2029\xff<>&é", 1.5, 0.0, "")
	f.Add(uint64(0), int64(-62135596800), int64(0), "ab", "change", "", "", "", "\t\n\r\b\f", 1e-7, 1e21, "x")
	f.Add(uint64(1<<63), int64(253402300800), int64(999999999), "", "", "", "", "", "", math.Copysign(0, -1), 5e-324, "")
	f.Fuzz(func(t *testing.T, seq uint64, sec, nsec int64, prev, kind, entry, tool, outcome, message string, dur, waited float64, detail string) {
		r := Record{
			Seq: seq, Time: time.Unix(sec, nsec).UTC(), Prev: prev, Kind: kind,
			Entry: entry, Tool: tool, Plugin: tool + entry, Digest: prev, ArgumentsSHA256: kind,
			Decision: outcome, DecidedBy: message, Outcome: outcome, Message: message,
			DurationMS: dur, WaitedMS: waited,
			Action: detail, Subject: message, Detail: detail, Actor: entry,
			StoreSeq: seq ^ uint64(sec), StoreID: outcome,
		}
		if nsec%3 == 0 {
			r.Time = time.Unix(sec, nsec).In(time.FixedZone("", int(nsec%50000)))
		}
		want, werr := encodeJSON(r)
		got, ok := appendRecord(nil, &r)
		if !ok {
			// Left to encoding/json (encode uses encodeJSON itself), but
			// only for what appendRecord says it leaves: this record has no
			// argument values, so only a non-finite duration or a time
			// encoding/json refuses.
			if _, terr := r.Time.AppendText(nil); terr == nil && finite(dur) && finite(waited) {
				t.Fatalf("appendRecord declined a record it covers: %+v", r)
			}
			return
		}
		if werr != nil {
			t.Fatalf("encoding/json refuses the record (%v) but appendRecord wrote %s", werr, got)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("appendRecord wrote\n%s\nencoding/json\n%s", got, want)
		}
	})
}

// FuzzRecent: reading a log from its end never panics, and on a log that
// List reads whole and whose records are in time order it finds what List
// finds, whatever the since, the limit and where chunks cut the lines.
func FuzzRecent(f *testing.F) {
	l, _ := Open(f.TempDir() + "/" + FileName)
	for i := range 5 {
		l.Append(Record{Kind: KindCall, Tool: string(rune('a' + i%2)), Outcome: "ok"})
	}
	l.Close()
	seed, _ := readAll(l.Path())
	f.Add(seed, uint16(7), uint8(2), uint8(0))
	f.Add([]byte("{\"seq\":1}\n{not json\n"), uint16(3), uint8(0), uint8(1))
	f.Add([]byte("\n\n{\"time\":\"2026-01-01T00:00:00Z\"}"), uint16(1), uint8(9), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16, skip, limit uint8) {
		c := int(chunk%1024) + 64 // tiny chunks cost O(line²/chunk); TestRecentMatchesList has them
		_, _ = recent(bytes.NewReader(data), int64(len(data)), Filter{}, c)
		all, err := List(bytes.NewReader(data), Filter{})
		if err != nil || !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) }) {
			return
		}
		filt := Filter{Limit: int(limit % 8), Tool: "a"}
		if limit%2 == 0 {
			filt.Tool = ""
		}
		if n := int(skip); n < len(all) {
			filt.Since = all[n].Time
		}
		want, _ := List(bytes.NewReader(data), filt)
		got, err := recent(bytes.NewReader(data), int64(len(data)), filt, c)
		if err != nil || len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%+v, chunk %d: Recent %d records (%v), List %d", filt, c, len(got), err, len(want))
		}
	})
}

// FuzzAppendReadsBack: whatever bytes a writer puts in a record's strings
// and argument values, Append writes a line that parses, verifies and
// reopens (a line that did not would stop the host at its next start).
func FuzzAppendReadsBack(f *testing.F) {
	f.Add("\xff", "a\xc3", `{"a":"\ud800"}`, "é")
	f.Add("tool", "ok\u2028", `{"a":1,"a":2}`, "\x00")
	f.Add("", "", "[1e999]", "")
	f.Fuzz(func(t *testing.T, tool, message, args, detail string) {
		path := t.TempDir() + "/" + FileName
		// A small ring and no fdatasync: what is checked is the bytes, and a
		// 4 MiB write-ahead file and three syncs per input made ~5 inputs a
		// second, slow enough for the fuzzing engine's own deadline to end
		// a run under load.
		l, err := open(path, smallRing, fastSync)
		if err != nil {
			t.Fatal(err)
		}
		rs := []Record{
			{Kind: KindCall, Tool: tool, Plugin: detail, Outcome: message, Message: message, DecidedBy: detail},
			{Kind: KindCall, Tool: tool, Message: message, Arguments: json.RawMessage(args)},
			{Kind: KindChange, Action: tool, Subject: detail, Detail: message, Actor: detail, StoreSeq: uint64(len(tool)) + 1, StoreID: message},
		}
		for _, r := range rs {
			if !json.Valid(r.Arguments) {
				r.Arguments = nil // the Recorder's own check
			}
			if _, err := l.Append(r); err != nil {
				t.Fatalf("append: %v", err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		if s, err := Verify(bytes.NewReader(data), ""); err != nil || s.Records != uint64(len(rs)) {
			t.Fatalf("Verify = %+v, %v", s, err)
		}
		if l, err = open(path, smallRing, fastSync); err != nil {
			t.Fatalf("reopen: %v", err)
		}
		l.Close()
	})
}
