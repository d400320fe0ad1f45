package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is newline-delimited JSON-RPC over a reader and a writer
// (the MCP stdio transport) that outlives bad input. The SDK's own
// IOTransport ends the session at the first line it cannot decode or that
// is over its cap; one stray line from a client would then take every tool
// away from it. Here:
//
//   - a line that is not JSON gets a -32700 parse error response and the
//     next line is read;
//   - JSON that is not one JSON-RPC message (a batch, a bare value, a
//     wrong version tag) gets -32600 with the request's id when one can be
//     read, else null;
//   - a line over the cap is skipped up to its newline without buffering
//     it, and gets -32600 with id null (its id is past what we read);
//   - a request whose id is a number the SDK would answer under another
//     (1.5, 2^53+1: it reads ids as float64, then int64) gets -32600 with
//     id null and is not passed on (checkRequestID), nor is one whose id
//     is that of a request not yet answered;
//   - at most maxUnanswered requests wait for their answers to be
//     written; the next is refused with -32000 (busy) by the read loop
//     itself, whose write waits for the output like the answers'. A
//     client that writes requests without reading the answers (a full
//     stdout pipe) so stops being read instead of filling memory: the SDK
//     queues every request it is handed without bound;
//   - a request named in notifications/cancelled while it runs gets no
//     response at all, as the spec asks ("receivers … SHOULD NOT send a
//     response for the cancelled request"); the SDK cancels its context;
//   - the end of the input ends the session only once every request read
//     before it has been answered (or cancelled), so that a client that
//     writes its requests and closes its end reads every answer — unless
//     the server waits for an answer of the client's (an elicitation),
//     which can no longer come: then at once;
//   - the end of stop (the process is told to stop) ends the input at
//     once: the SDK then cancels the requests in flight and fails the
//     server's own requests to the client, which it does not do on Close
//     (it waits for every handler, and a handler that waits for the
//     client's answer would keep the process up). Writes still waiting
//     for the output stopWriteGrace after that are given up, so a client
//     that stopped reading cannot keep the process up either.
//
// Batches are refused: MCP removed them in 2025-06-18, and answering one
// needs the batch bookkeeping the SDK keeps private.
type lineTransport struct {
	r       io.ReadCloser
	w       io.WriteCloser
	maxLine int
	stop    <-chan struct{} // nil: never
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		w:        t.w,
		writes:   make(chan lineWrite),
		abandon:  make(chan struct{}),
		closers:  []io.Closer{t.r, t.w},
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
		inFlight: map[jsonrpc.ID]bool{},
		asked:    map[jsonrpc.ID]bool{},
		answered: make(chan struct{}, 1),
		stop:     t.stop,
	}
	go c.writeLoop()
	go c.abandonWrites()
	go c.readLoop(bufio.NewReaderSize(t.r, 64<<10), t.maxLine)
	return c, nil
}

// maxUnanswered bounds the requests read over stdio and not yet answered
// on the output: above the host's 64 running and 1,024 queued calls' worth
// of a 400-wide fan-out, far below what fills memory (each waiting answer
// is held until it is written).
const maxUnanswered = 1024

// stopWriteGrace is how long writes may still wait for the output once the
// process is told to stop: the answers the SDK writes then (the requests
// it cancels) go out to a client that reads, and a client that does not
// read cannot hold the exit.
const stopWriteGrace = 2 * time.Second

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	incoming  chan readResult // read loop → Read; the read loop owns the reader
	closed    chan struct{}
	stop      <-chan struct{}
	closeOnce sync.Once
	closers   []io.Closer

	// w is written only by writeLoop, one message per write, in the order
	// writeLine hands them over on writes. abandon is closed when the
	// connection closes or stopWriteGrace after stop: writeLine then stops
	// waiting for a write the output does not take.
	w       io.Writer
	writes  chan lineWrite
	abandon chan struct{}

	// mu guards inFlight: the ids of requests read and whose answers are
	// not yet written (or given up), mapped to whether the client
	// cancelled them. At most maxUnanswered.
	mu       sync.Mutex
	inFlight map[jsonrpc.ID]bool
	// asked (guarded by mu) holds the ids of the server's requests to the
	// client (elicitation) not yet answered.
	asked map[jsonrpc.ID]bool
	// answered gets a token (buffered, one) after each response and each
	// request to the client, for waitAnswered.
	answered chan struct{}
}

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	case <-c.stop:
		return nil, io.EOF
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		c.asked[req.ID] = true
		c.mu.Unlock()
		c.wake()
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		// The request counts as unanswered until its answer is written:
		// an answer the output does not take holds its place under
		// maxUnanswered.
		defer func() {
			c.mu.Lock()
			delete(c.inFlight, resp.ID)
			c.mu.Unlock()
			c.wake()
		}()
		c.mu.Lock()
		cancelled := c.inFlight[resp.ID]
		c.mu.Unlock()
		if cancelled {
			return nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

// wake tells waitAnswered to look again.
func (c *lineConn) wake() {
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

// lineWrite is one message for writeLoop and where its result goes.
type lineWrite struct {
	line []byte
	done chan error // buffered: writeLoop never waits for its reader
}

// writeLine writes data and a newline as one write, and returns once it is
// written, or with mcp.ErrConnectionClosed once writes are abandoned.
func (c *lineConn) writeLine(data []byte) error {
	select {
	case <-c.abandon:
		return mcp.ErrConnectionClosed
	default:
	}
	w := lineWrite{line: append(data, '\n'), done: make(chan error, 1)}
	select {
	case c.writes <- w:
	case <-c.abandon:
		return mcp.ErrConnectionClosed
	}
	select {
	case err := <-w.done:
		return err
	case <-c.abandon:
		return mcp.ErrConnectionClosed
	}
}

// writeLoop makes the writes, so that a writer waiting for an output that
// does not take them can give up (a blocking write cannot be interrupted).
func (c *lineConn) writeLoop() {
	for {
		select {
		case w := <-c.writes:
			_, err := c.w.Write(w.line)
			w.done <- err
		case <-c.abandon:
			return
		}
	}
}

// abandonWrites closes abandon when the connection closes, or
// stopWriteGrace after stop.
func (c *lineConn) abandonWrites() {
	defer close(c.abandon)
	select {
	case <-c.closed:
		return
	case <-c.stop:
	}
	t := time.NewTimer(stopWriteGrace)
	defer t.Stop()
	select {
	case <-c.closed:
	case <-t.C:
	}
}

func (c *lineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		for _, cl := range c.closers {
			err = errors.Join(err, cl.Close())
		}
	})
	return err
}
