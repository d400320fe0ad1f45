package observe

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// LineBuffer gathers an operator log's lines and writes them in batches:
// what Write accepts reaches the underlying writer within the buffer's
// delay, in order, in one write per batch.
//
// Why: `toolhost serve` logs a line per call. Written as it comes, that is
// a write system call per call, and a wake-up per call of whatever reads
// the stream (a terminal, journald, a supervisor's pipe) — on a loaded
// 2-core host, CPU taken from the calls. The audit log, not this stream,
// is the durable record of every call: a line that is still buffered when
// the process is killed is lost from the operator's log only.
//
// Warnings and errors are not held back: Urgent writes at once, after
// whatever is buffered, and FlushingHandler flushes after each record at or
// above a level. The zero value is not usable; use NewLineBuffer.
type LineBuffer struct {
	w     io.Writer
	delay time.Duration

	flushMu sync.Mutex // held while writing to w: one batch at a time, in order
	mu      sync.Mutex // guards buf and armed
	buf     []byte
	armed   bool
	timer   *time.Timer
}

// lineBufferLimit is the most a LineBuffer holds: a Write that takes it
// past this flushes at once, in the writer's goroutine.
const lineBufferLimit = 64 << 10

// NewLineBuffer returns a LineBuffer over w that writes what it holds at
// most delay after the first byte came in.
func NewLineBuffer(w io.Writer, delay time.Duration) *LineBuffer {
	b := &LineBuffer{w: w, delay: delay}
	b.timer = time.AfterFunc(time.Hour, func() { b.Flush() })
	b.timer.Stop()
	return b
}

// Write buffers p. It never fails: an error of the underlying writer is
// returned by the Flush that met it (slog drops them either way).
func (b *LineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf = append(b.buf, p...)
	full := len(b.buf) >= lineBufferLimit
	if !full && !b.armed {
		b.armed = true
		b.timer.Reset(b.delay)
	}
	b.mu.Unlock()
	if full {
		b.Flush()
	}
	return len(p), nil
}

// Flush writes everything buffered so far, in one write, before it
// returns.
func (b *LineBuffer) Flush() error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	b.mu.Lock()
	out := b.buf
	b.buf = nil
	if b.armed {
		b.armed = false
		b.timer.Stop()
	}
	b.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	_, err := b.w.Write(out)
	return err
}

// Urgent returns a writer whose every write is written at once, after what
// the buffer holds (messages to the operator that must not wait, like
// "shutting down" or a command's final error).
func (b *LineBuffer) Urgent() io.Writer { return urgent{b} }

type urgent struct{ b *LineBuffer }

func (u urgent) Write(p []byte) (int, error) {
	u.b.Write(p)
	if err := u.b.Flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// FlushingHandler wraps h, whose output goes to b, so that a record at or
// above level is written out at once: warnings and errors are not held
// back with the per-call lines.
func FlushingHandler(h slog.Handler, b *LineBuffer, level slog.Level) slog.Handler {
	return flushing{h: h, b: b, level: level}
}

type flushing struct {
	h     slog.Handler
	b     *LineBuffer
	level slog.Level
}

func (f flushing) Enabled(ctx context.Context, l slog.Level) bool { return f.h.Enabled(ctx, l) }

func (f flushing) Handle(ctx context.Context, r slog.Record) error {
	err := f.h.Handle(ctx, r)
	if r.Level >= f.level {
		f.b.Flush()
	}
	return err
}

func (f flushing) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushing{h: f.h.WithAttrs(attrs), b: f.b, level: f.level}
}

func (f flushing) WithGroup(name string) slog.Handler {
	return flushing{h: f.h.WithGroup(name), b: f.b, level: f.level}
}
