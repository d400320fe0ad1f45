package worker

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// TestRawPipeCarriesMoreThanThePipeHolds writes 1 MiB (16 times a pipe's
// buffer) through a rawPipe while the other end reads it, so both sides
// wait in the poller; then the writer's close reads as EOF, and a closed
// rawPipe refuses to read.
func TestRawPipeCarriesMoreThanThePipeHolds(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := newRawPipe(r)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := newRawPipe(w)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	wrote := make(chan error, 1)
	go func() {
		n, err := pw.Write(want)
		if err == nil && n != len(want) {
			err = errors.New("short write without an error")
		}
		if cerr := pw.Close(); err == nil {
			err = cerr
		}
		wrote <- err
	}()
	got, err := io.ReadAll(pr)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written (or different ones)", len(got), len(want))
	}
	if n, err := pr.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after the writer closed = %d, %v; want 0, EOF", n, err)
	}
	pr.Close()
	if _, err := pr.Read(make([]byte, 8)); err == nil || err == io.EOF {
		t.Fatalf("read of a closed pipe = %v; want a closed-file error", err)
	}
}

// TestRawPipeWriteToClosedReaderFails: a worker that died makes the
// supervisor's next write fail (EPIPE), not hang.
func TestRawPipeWriteToClosedReaderFails(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pw, err := newRawPipe(w)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	r.Close()
	if _, err := pw.Write([]byte("frame")); err == nil {
		t.Fatal("write to a pipe nobody reads succeeded")
	}
}
