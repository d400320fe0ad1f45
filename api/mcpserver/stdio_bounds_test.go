package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// requestLines is an endless client input: ping requests with ids 1, 2, …,
// one line per Read.
type requestLines struct{ next int }

func (r *requestLines) Read(p []byte) (int, error) {
	r.next++
	return copy(p, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", r.next)), nil
}

func (*requestLines) Close() error { return nil }

// A client that sends requests without reading the answers must not be
// read without bound: the SDK queues every request it is handed, and
// `toolhost mcp` fed pings by a client whose stdout pipe was full grew by
// ~35 MB a second. Requests beyond maxUnanswered waiting for their answers
// are refused (busy, under their id) by the read loop, whose refusal is a
// write like the answers, so reading stops when the output does; an answer
// written frees a place, and only once it is written.
func TestStdioBoundsUnansweredRequests(t *testing.T) {
	in := &requestLines{}
	out, outW := io.Pipe()
	tr := &lineTransport{r: in, w: outW, maxLine: 1 << 10}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	// The "SDK" takes every request and answers none.
	for want := 1; want <= maxUnanswered; want++ {
		msg, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if id := msg.(*jsonrpc.Request).ID.Raw(); id != int64(want) {
			t.Fatalf("request %d read as id %v", want, id)
		}
	}
	// The next request is not handed on but refused, under its own id.
	got := make(chan jsonrpc.Message, 1)
	go func() {
		msg, _ := conn.Read(context.Background())
		got <- msg
	}()
	var line string
	select {
	case msg := <-got:
		t.Fatalf("request %v was handed on with %d requests unanswered; want it refused", msg, maxUnanswered)
	case line = <-lines:
	}
	var refusal struct {
		ID    int64         `json:"id"`
		Error jsonrpc.Error `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &refusal); err != nil || refusal.ID != maxUnanswered+1 || refusal.Error.Code != -32000 || !strings.Contains(refusal.Error.Message, "read the answers") {
		t.Fatalf("with %d requests unanswered, request %d got %s; want a -32000 busy error under its id that says to read the answers", maxUnanswered, maxUnanswered+1, line)
	}

	// An answer frees a place once it is written (the test reads it): the
	// next request is handed on. Requests read meanwhile are refused.
	first, _ := jsonrpc.MakeID(float64(1))
	answered := make(chan error, 1)
	go func() {
		answered <- conn.Write(context.Background(), &jsonrpc.Response{ID: first, Result: json.RawMessage(`{}`)})
	}()
	for line = range lines {
		if strings.Contains(line, `"result"`) {
			break
		}
		if !strings.Contains(line, `"code":-32000`) {
			t.Fatalf("while the answer waited to be written: %s, want only busy refusals", line)
		}
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines { // later refusals, if any
		}
	}()
	select {
	case msg := <-got:
		if _, ok := msg.(*jsonrpc.Request); !ok {
			t.Fatalf("after an answer was written, Read gave %v", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no request handed on within 10s of an answer written")
	}
}

// blockedOutput is a client's stdout that it never reads: every write
// waits until the test ends.
type blockedOutput struct {
	writing chan struct{} // gets a token as each write starts
	release chan struct{}
}

func (b blockedOutput) Write(p []byte) (int, error) {
	select {
	case b.writing <- struct{}{}:
	default:
	}
	<-b.release
	return 0, io.ErrClosedPipe
}

func (blockedOutput) Close() error { return nil }

// Told to stop (SIGTERM), `toolhost mcp` whose client had stopped reading
// its stdout never exited: the SDK's close waits for every handler, and a
// handler writing its answer waited on the pipe for good. Writes still
// waiting stopWriteGrace after the stop are given up.
func TestStdioStopsWithAnOutputNobodyReads(t *testing.T) {
	s := New(newFake(), "dev")
	defer s.Close()
	out := blockedOutput{writing: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(out.release)
	in, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, in, out) }()
	// The answers to these wait for the output.
	for i := range 4 {
		if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i); err != nil {
			t.Fatal(err)
		}
	}
	<-out.writing
	cancel()
	select {
	case <-done:
	case <-time.After(stopWriteGrace + 20*time.Second):
		t.Fatal("Run did not return after its stop while the output took no writes")
	}
}
