package audit

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fastSync stands in for fdatasync where a test only needs the bytes
// written: a crash image is built from what the files hold, never from
// what a disk kept.
func fastSync(*os.File) error { return nil }

// smallRing makes the ring wrap every few records.
const smallRing = walRing + 2048

// crashImage writes what a disk may hold after a power cut at this moment
// into a new directory and returns the log's path there: audit.jsonl's
// synced part (through the checkpoint) intact, its rest as tail says, and
// the write-ahead file as written (every append returned once it was
// synced).
func crashImage(t *testing.T, l *Log, tail func(unsynced []byte) []byte) string {
	t.Helper()
	data, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := os.ReadFile(l.wal.path)
	if err != nil {
		t.Fatal(err)
	}
	synced := l.wal.ck.length
	path := filepath.Join(t.TempDir(), FileName)
	img := append(bytes.Clone(data[:synced]), tail(bytes.Clone(data[synced:]))...)
	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(walPath(path), ring, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// reopened opens the image, closes it and returns its lines, checking the
// whole chain.
func reopened(t *testing.T, path string, ringSize int64) [][]byte {
	t.Helper()
	l, err := open(path, ringSize, fastSync)
	if err != nil {
		t.Fatalf("open after a crash: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if _, err := Verify(bytes.NewReader(data), ""); err != nil {
		t.Fatalf("the log after recovery does not verify: %v\n%s", err, data)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	return lines[:len(lines)-1]
}

// TestAckedRecordsSurviveACrash: after any append returned, whatever a
// power cut leaves of audit.jsonl's unsynced end (nothing, a torn line,
// zeros, all of it), Open gives back every record that returned, byte for
// byte, and a chain that verifies; what it repaired is recorded. The ring
// is small, so the crashes fall in every phase of its laps.
func TestAckedRecordsSurviveACrash(t *testing.T) {
	tails := map[string]func([]byte) []byte{
		"lost":  func([]byte) []byte { return nil },
		"whole": func(b []byte) []byte { return b },
		"torn": func(b []byte) []byte {
			if len(b) > 7 {
				return b[:len(b)-7]
			}
			return b
		},
		"zeros": func(b []byte) []byte { return make([]byte, len(b)) },
		"first line only": func(b []byte) []byte {
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				return b[:i+1]
			}
			return b
		},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	path := filepath.Join(t.TempDir(), FileName)
	l, err := open(path, smallRing, fastSync)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	laps := uint64(0)
	for i := 1; i <= 60; i++ {
		if _, err := l.Append(Record{Kind: KindChange, Action: "install", Subject: strings.Repeat("x", rng.IntN(700))}); err != nil {
			t.Fatal(err)
		}
		laps = l.wal.ck.gen
		acked, _ := os.ReadFile(path)
		for name, tail := range tails {
			got := reopened(t, crashImage(t, l, tail), smallRing)
			want := bytes.SplitAfter(acked, []byte("\n"))
			want = want[:len(want)-1]
			if len(got) < len(want) {
				t.Fatalf("after append %d, %s tail: %d records back, %d returned", i, name, len(got), len(want))
			}
			for j := range want {
				if !bytes.Equal(got[j], want[j]) {
					t.Fatalf("after append %d, %s tail: record %d differs:\n%s\n%s", i, name, j+1, got[j], want[j])
				}
			}
			repaired := len(got) > len(want) && bytes.Contains(got[len(want)], []byte(`"action":"audit_repair"`))
			if changed := !bytes.Equal(tail(acked[l.wal.ck.length:]), acked[l.wal.ck.length:]); changed != repaired {
				t.Fatalf("after append %d, %s tail: repaired %v, the image changed %v:\n%s", i, name, repaired, changed, bytes.Join(got, nil))
			}
		}
	}
	if laps < 5 {
		t.Fatalf("the ring went round %d times; the test wants crashes across laps", laps)
	}
}

// TestStaleRingLinesDoNotChain: a ring holds lines of an earlier life (a
// crash whose last group was torn, so recovery stopped before them) with
// the same sequence numbers as the records written since; after another
// crash, recovery follows the hash chain, not the numbers.
func TestStaleRingLinesDoNotChain(t *testing.T) {
	const ring = walRing + 64<<10
	path := filepath.Join(t.TempDir(), FileName)
	l, err := open(path, ring, fastSync)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := l.Append(Record{Kind: KindChange, Action: "install", Subject: fmt.Sprintf("old-%d-%s", i+1, strings.Repeat("o", 200))}); err != nil {
			t.Fatal(err)
		}
	}
	// First crash: audit.jsonl lost everything unsynced, and record 3's
	// line in the ring is torn.
	first := crashImage(t, l, func([]byte) []byte { return nil })
	l.Close()
	walData, _ := os.ReadFile(walPath(first))
	i := bytes.Index(walData, []byte(`"subject":"old-3`))
	walData[i+20] = 'X'
	os.WriteFile(walPath(first), walData, 0o600)

	l2, err := open(first, ring, fastSync)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := l2.Head()
	if head != 3 { // old-1, old-2, the repair record
		t.Fatalf("head after the first recovery = %d, want 3", head)
	}
	for i := range 3 {
		if _, err := l2.Append(Record{Kind: KindChange, Action: "remove", Subject: fmt.Sprintf("new-%d", i+4)}); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Contains(must(os.ReadFile(walPath(first))), []byte(`"subject":"old-5`)) {
		t.Fatal("the test wants stale records 4-6 still in the ring")
	}
	second := crashImage(t, l2, func([]byte) []byte { return nil })
	written := l2.wal.pos
	l2.Close()
	// Put the stale lines first in the ring, so that numbers alone would
	// pick them.
	var stale []byte
	for _, line := range bytes.SplitAfter(walData[walRing:], []byte("\n")) {
		if bytes.Contains(line, []byte(`"subject":"old-`)) && !bytes.Contains(line, []byte("old-1")) && !bytes.Contains(line, []byte("old-2")) {
			stale = append(stale, line...)
		}
	}
	img := must(os.ReadFile(walPath(second)))
	current := bytes.Clone(img[walRing:written])
	copy(img[walRing:], append(stale, current...))
	os.WriteFile(walPath(second), img, 0o600)
	got := reopened(t, second, ring)
	for _, want := range []string{"old-1", "old-2", "audit_repair", "new-4", "new-5", "new-6", "audit_repair"} {
		if len(got) == 0 || !bytes.Contains(got[0], []byte(want)) {
			t.Fatalf("want %s next, the log is:\n%s", want, bytes.Join(got, nil))
		}
		got = got[1:]
	}
	if len(got) != 0 {
		t.Fatalf("records after the last repair: %s", bytes.Join(got, nil))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestWithoutCheckpointTheLogAloneCounts: a log from before the
// write-ahead file, or one whose file is damaged, opens from audit.jsonl
// alone (whose every record was synced) and gets a new write-ahead file;
// the chain records that it continued unchecked, and from which seq.
func TestWithoutCheckpointTheLogAloneCounts(t *testing.T) {
	for name, damage := range map[string]func(string){
		"missing":   func(p string) { os.Remove(p) },
		"short":     func(p string) { os.Truncate(p, 100) },
		"bad slots": func(p string) { f, _ := os.OpenFile(p, os.O_RDWR, 0); f.WriteAt(make([]byte, 2*walSlot), 0); f.Close() },
	} {
		t.Run(name, func(t *testing.T) {
			path, lines := writeLog(t, 3)
			damage(walPath(path))
			l, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if seq, _ := l.Head(); seq != 4 {
				t.Fatalf("head %d, want 4 (3 and the unchecked start)", seq)
			}
			l.Append(Record{Kind: KindChange, Action: "install", Subject: "after"})
			l.Close()
			got := reopened(t, path, walSize)
			if len(got) != 5 || !bytes.Equal(bytes.Join(got[:3], nil), bytes.Join(lines, nil)) {
				t.Fatalf("log:\n%s", bytes.Join(got, nil))
			}
			note := must(ParseLine(bytes.TrimSuffix(got[3], []byte("\n"))))
			if note.Action != "audit_unchecked_start" || !strings.Contains(note.Detail, "continues from record seq 3") {
				t.Fatalf("record 4: %+v", note)
			}
		})
	}
}

// TestCheckpointRefusesACutOrChangedLog: the checkpoint knows how much of
// audit.jsonl was durable and how it ended; a log cut below it, or changed
// there, is refused with what to do, not built upon.
func TestCheckpointRefusesACutOrChangedLog(t *testing.T) {
	path, lines := writeLog(t, 3)
	all := bytes.Join(lines, nil)
	os.WriteFile(path, bytes.Join(lines[:2], nil), 0o600)
	if _, err := Open(path); !errors.Is(err, ErrLogDamaged) || !strings.Contains(err.Error(), "shorter than") || !strings.Contains(err.Error(), "aside") {
		t.Fatalf("cut log: %v", err)
	}
	changed := bytes.Clone(all)
	changed[len(changed)-10] ^= 1
	os.WriteFile(path, changed, 0o600)
	if _, err := Open(path); !errors.Is(err, ErrLogDamaged) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("changed log: %v", err)
	}
	swapped := append(bytes.Clone(lines[0]), lines[2]...)
	swapped = append(swapped, lines[1]...)
	os.WriteFile(path, swapped, 0o600)
	if _, err := Open(path); !errors.Is(err, ErrLogDamaged) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("reordered log: %v", err)
	}
	os.WriteFile(path, all, 0o600)
	if l, err := Open(path); err != nil {
		t.Fatalf("the log as it was: %v", err)
	} else {
		l.Close()
	}
}

// FuzzOpenAfterCrash: whatever bytes follow the checkpoint in audit.jsonl
// and whatever the ring holds, Open neither panics nor refuses (the synced
// part is intact), keeps the synced records byte for byte and leaves a
// chain that verifies.
func FuzzOpenAfterCrash(f *testing.F) {
	dir := f.TempDir()
	base := filepath.Join(dir, FileName)
	l, err := open(base, walRing+1024, fastSync)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		l.Append(Record{Kind: KindChange, Action: "install", Subject: fmt.Sprint("p", i)})
	}
	synced := l.wal.ck.length
	data, _ := os.ReadFile(base)
	ring, _ := os.ReadFile(walPath(base))
	l.Close()
	f.Add(data[synced:], ring[walRing:])
	f.Add([]byte{}, ring[walRing:])
	f.Add([]byte("{\"seq\":4}\n"), []byte("\n{\"seq\":99999999999999999999999\n\x00"))
	f.Fuzz(func(t *testing.T, tail, r []byte) {
		path := filepath.Join(t.TempDir(), FileName)
		os.WriteFile(path, append(bytes.Clone(data[:synced]), tail...), 0o600)
		img := bytes.Clone(ring)
		copy(img[walRing:], r)
		os.WriteFile(walPath(path), img, 0o600)
		got := reopened(t, path, walRing+1024)
		if !bytes.HasPrefix(bytes.Join(got, nil), data[:synced]) {
			t.Fatalf("the synced records changed:\n%s", bytes.Join(got, nil))
		}
	})
}

// TestCheckpointsMatchTheFile: when records are appended while the leader
// syncs audit.jsonl for a checkpoint (they wait in the buffer, ahead of the
// file), the checkpoint names the last record in the file, not the last one
// appended: a crash right after it, losing all of audit.jsonl past the
// checkpoint, reopens to a whole chain. (A checkpoint that ran ahead made
// the next start after a crash refuse the log as damaged.)
func TestCheckpointsMatchTheFile(t *testing.T) {
	const ring = walRing + 700 // about two records: most groups start a lap
	path := filepath.Join(t.TempDir(), FileName)
	l, err := open(path, ring, fastSync)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	images := 0
	l.fsync = func(f *os.File) error {
		if !strings.HasSuffix(f.Name(), walSuffix) {
			// audit.jsonl is being synced for a checkpoint: a record
			// arrives meanwhile (another call's append; refused once
			// Close has begun).
			if _, err := l.write(Record{Kind: KindChange, Action: "install", Subject: "meanwhile"}); err != nil && err != errClosed {
				t.Error(err)
			}
			return nil
		}
		walData := must(os.ReadFile(f.Name()))
		a, ok := newestCheckpoint(walData)
		if !ok {
			t.Fatal("no valid checkpoint in the write-ahead file")
		}
		img := filepath.Join(t.TempDir(), FileName)
		os.WriteFile(img, must(os.ReadFile(path))[:a.length], 0o600)
		os.WriteFile(walPath(img), walData, 0o600)
		images++
		il, err := open(img, ring, fastSync)
		if err != nil {
			t.Fatalf("a crash at this sync (checkpoint seq %d, %d bytes): %v", a.seq, a.length, err)
		}
		il.Close()
		if _, err := Verify(bytes.NewReader(must(os.ReadFile(img))), ""); err != nil {
			t.Fatalf("recovered log: %v", err)
		}
		return nil
	}
	for i := range 40 {
		if _, err := l.Append(Record{Kind: KindChange, Action: "install", Subject: fmt.Sprint("r", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if images < 40 || l.wal.ck.gen < 10 {
		t.Fatalf("%d crash images over %d checkpoints: the test wants many of each", images, l.wal.ck.gen)
	}
}
