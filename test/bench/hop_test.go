package bench

import (
	"io"
	"os"
	"os/exec"
	"testing"
)

// hopChild is the argument that makes this test binary the echo child.
const hopChild = "bench-hop-child"

// runHopChild echoes what it reads on stdin to stdout until stdin ends.
func runHopChild() int {
	buf := make([]byte, 4096)
	for {
		n, err := os.Stdin.Read(buf)
		if err != nil {
			return 0
		}
		if _, err := os.Stdout.Write(buf[:n]); err != nil {
			return 1
		}
	}
}

// benchHop measures the floor under every call that crosses into another
// process on this machine: a small frame to a child process over a pipe and
// back over another, the child a Go process with one P like a worker, doing
// nothing but echo it (measured the same, ~10 µs p50, with the child reading
// through the runtime's poller as workers do). What a toolhost-isolated
// call costs beyond this and its toolhost-inproc time is the supervisor's
// and the worker's own work per round trip, not the hop.
func benchHop(b *testing.B) {
	cmd := exec.Command(os.Args[0], hopChild)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	msg := make([]byte, 160) // about a call frame of the echo row
	reply := make([]byte, len(msg))
	measure(b, func() error {
		if _, err := in.Write(msg); err != nil {
			return err
		}
		_, err := io.ReadFull(out, reply)
		return err
	})
}
