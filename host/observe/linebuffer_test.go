package observe

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder keeps each write separately, so a test sees the batches.
type recorder struct {
	mu     sync.Mutex
	writes []string
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func (r *recorder) all() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.writes, ""), len(r.writes)
}

func TestLineBufferBatchesInOrder(t *testing.T) {
	rec := &recorder{}
	b := NewLineBuffer(rec, time.Hour) // only explicit flushes in this test
	for i := range 100 {
		fmt.Fprintf(b, "line %d\n", i)
	}
	if got, n := rec.all(); n != 0 {
		t.Fatalf("written before the delay: %d writes %q", n, got)
	}
	fmt.Fprintf(b.Urgent(), "shutting down\n")
	got, n := rec.all()
	if n != 1 {
		t.Errorf("urgent write took %d writes, want one batch", n)
	}
	var want strings.Builder
	for i := range 100 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	want.WriteString("shutting down\n")
	if got != want.String() {
		t.Errorf("order lost:\n%s", got)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, n := rec.all(); n != 1 {
		t.Errorf("an empty flush wrote: %d writes", n)
	}
}

func TestLineBufferWritesWithinItsDelay(t *testing.T) {
	rec := &recorder{}
	b := NewLineBuffer(rec, time.Millisecond)
	for round := range 3 {
		line := fmt.Sprintf("round %d\n", round)
		b.Write([]byte(line))
		deadline := time.Now().Add(10 * time.Second) // generous: a loaded machine; the delay is 1 ms
		for {
			if got, _ := rec.all(); strings.HasSuffix(got, line) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: line not written by the timer", round)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func TestLineBufferFlushesWhenFull(t *testing.T) {
	rec := &recorder{}
	b := NewLineBuffer(rec, time.Hour)
	line := bytes.Repeat([]byte("x"), 1023)
	line = append(line, '\n')
	for range lineBufferLimit / len(line) {
		b.Write(line)
	}
	got, n := rec.all()
	if n != 1 || len(got) != lineBufferLimit {
		t.Fatalf("after %d bytes: %d writes of %d bytes, want one of %d", lineBufferLimit, n, len(got), lineBufferLimit)
	}
}

func TestFlushingHandlerWritesWarningsAtOnce(t *testing.T) {
	rec := &recorder{}
	b := NewLineBuffer(rec, time.Hour)
	log := slog.New(FlushingHandler(slog.NewTextHandler(b, nil), b, slog.LevelWarn)).With("host", "h1")
	log.Info("tool call", "tool", "echo")
	if _, n := rec.all(); n != 0 {
		t.Fatalf("an info line was written at once")
	}
	log.WithGroup("g").Warn("worker died", "pid", 7)
	got, _ := rec.all()
	if !strings.Contains(got, `msg="tool call" host=h1 tool=echo`) || !strings.Contains(got, `msg="worker died" host=h1 g.pid=7`) ||
		strings.Index(got, "tool call") > strings.Index(got, "worker died") {
		t.Errorf("want the info line, then the warning, both written at the warning:\n%s", got)
	}
}

func TestLineBufferConcurrentWritersKeepWholeLines(t *testing.T) {
	rec := &recorder{}
	b := NewLineBuffer(rec, 50*time.Microsecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(b, "writer %d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	b.Flush()
	got, _ := rec.all()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("%d lines, want %d", len(lines), 8*500)
	}
	next := map[int]int{}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l, "writer %d line %d", &g, &i); err != nil || next[g] != i {
			t.Fatalf("line %q: want writer %d's line %d", l, g, next[g])
		}
		next[g]++
	}
}
