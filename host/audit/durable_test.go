package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// verifyDurableFile is what `toolhost audit verify` does: the write-ahead
// file first, then the log.
func verifyDurableFile(t *testing.T, path string, ringSize int64) (Summary, error) {
	t.Helper()
	d, err := readDurable(walPath(path), ringSize)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return VerifyDurable(f, "", d)
}

// TestVerifyDurableCatchesACutLog: records cut from the end leave a whole
// chain that Verify passes without a kept head; against the write-ahead
// file's checkpoint (through seq 5), VerifyDurable names the cut — whole
// lines, nothing left, or a cut inside a line.
func TestVerifyDurableCatchesACutLog(t *testing.T) {
	path, lines := writeLog(t, 5)
	for name, kept := range map[string][]byte{
		"two records": bytes.Join(lines[:2], nil),
		"emptied":     nil,
		"mid-line":    append(bytes.Join(lines[:3], nil), lines[3][:40]...),
	} {
		t.Run(name, func(t *testing.T) {
			os.WriteFile(path, kept, 0o600)
			walBefore := must(os.ReadFile(walPath(path)))
			s, err := verifyDurableFile(t, path, walSize)
			var bad *BadRecordError
			if !errors.As(err, &bad) {
				t.Fatalf("a cut log verifies: %+v, %v", s, err)
			}
			wantEnd := fmt.Sprintf("the log ends at seq %d: records were cut", bytes.Count(kept, []byte("\n")))
			for _, want := range []string{"records through seq 5 were made durable", wantEnd, "restore audit.jsonl from a backup"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q lacks %q", err, want)
				}
			}
			if !bytes.Equal(must(os.ReadFile(path)), kept) || !bytes.Equal(must(os.ReadFile(walPath(path))), walBefore) {
				t.Fatal("verify wrote to the files")
			}
		})
	}
	os.WriteFile(path, bytes.Join(lines, nil), 0o600)
	if s, err := verifyDurableFile(t, path, walSize); err != nil || s.Records != 5 || s.Pending != 0 || s.Torn != 0 {
		t.Fatalf("the whole log: %+v, %v", s, err)
	}
}

// TestVerifyDurableCatchesARewrittenLog: a chain that is whole but whose
// record at the checkpoint's seq is not the one made durable (the log was
// replaced by another, longer or not) is damaged there.
func TestVerifyDurableCatchesARewrittenLog(t *testing.T) {
	path, _ := writeLog(t, 3)
	os.WriteFile(path, rewrite(t, 5), 0o600)
	_, err := verifyDurableFile(t, path, walSize)
	var bad *BadRecordError
	if !errors.As(err, &bad) || bad.Seq != 3 || !strings.Contains(err.Error(), "not the record seq 3 that toolhost made durable") {
		t.Fatalf("a rewritten log: %v", err)
	}
}

// rewrite is a log of n change records none of which writeLog writes.
func rewrite(t *testing.T, n int) []byte {
	t.Helper()
	path := t.TempDir() + "/" + FileName
	l, err := open(path, smallRing, fastSync)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(Record{Kind: KindChange, Action: "install", Subject: fmt.Sprint("forged-", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return closeAndRead(t, l, path)
}

// TestVerifyDurablePendingIsNotDamage: after a crash, records the ring
// holds past audit.jsonl's end, and an unfinished last line past the
// checkpoint, are what Open repairs: VerifyDurable reports them (Pending,
// Torn) and passes; after Open, nothing is pending and the log holds them.
func TestVerifyDurablePendingIsNotDamage(t *testing.T) {
	for name, tail := range map[string]func([]byte) []byte{
		"lost": func([]byte) []byte { return nil },
		"torn": func(b []byte) []byte { return b[:len(b)/2] },
	} {
		t.Run(name, func(t *testing.T) {
			l, err := open(t.TempDir()+"/"+FileName, smallRing, fastSync)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := l.Append(Record{Kind: KindChange, Action: "install", Subject: fmt.Sprint("p", i)}); err != nil {
					t.Fatal(err)
				}
			}
			img := crashImage(t, l, tail)
			l.Close()
			before := must(os.ReadFile(img))
			s, err := verifyDurableFile(t, img, smallRing)
			if err != nil || s.Records+uint64(s.Pending) != 3 || (s.Torn > 0) != (name == "torn") {
				t.Fatalf("after a crash: %+v, %v", s, err)
			}
			if _, err := Verify(bytes.NewReader(before), ""); (err != nil) != (name == "torn") {
				t.Fatalf("plain Verify: %v", err) // without the ring, a torn line is all it can say
			}
			if !bytes.Equal(must(os.ReadFile(img)), before) {
				t.Fatal("verify wrote to the log")
			}
			got := reopened(t, img, smallRing)
			if len(got) != 4 { // the three and the repair record
				t.Fatalf("after Open:\n%s", bytes.Join(got, nil))
			}
			if s, err := verifyDurableFile(t, img, smallRing); err != nil || s.Records != 4 || s.Pending != 0 || s.Torn != 0 {
				t.Fatalf("after Open: %+v, %v", s, err)
			}
		})
	}
}

// TestReadDurableWritesNothing: without a write-ahead file there is
// nothing to check against (a log from before it), and reading makes none.
func TestReadDurableWritesNothing(t *testing.T) {
	path := t.TempDir() + "/" + FileName
	d, err := ReadDurable(path)
	if d != nil || err != nil {
		t.Fatalf("%v, %v", d, err)
	}
	if _, err := os.Stat(walPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadDurable made %s: %v", walPath(path), err)
	}
}
