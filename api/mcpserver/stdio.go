package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
//     client's answer would keep the process up).
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
		closers:  []io.Closer{t.r, t.w},
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
		inFlight: map[jsonrpc.ID]bool{},
		asked:    map[jsonrpc.ID]bool{},
		answered: make(chan struct{}, 1),
		stop:     t.stop,
	}
	go c.readLoop(bufio.NewReaderSize(t.r, 64<<10), t.maxLine)
	return c, nil
}

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

	// writeMu guards w, so that each message is one write and messages do
	// not interleave.
	writeMu sync.Mutex
	w       io.Writer

	// mu guards inFlight: the ids of requests read and not yet answered,
	// mapped to whether the client cancelled them. Bounded by the requests
	// the SDK is running.
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
		c.mu.Lock()
		cancelled := c.inFlight[resp.ID]
		delete(c.inFlight, resp.ID)
		c.mu.Unlock()
		c.wake()
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

func (c *lineConn) writeLine(data []byte) error {
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
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

// readLoop reads lines until the reader fails, hands each good message to
// Read, and answers bad lines itself.
func (c *lineConn) readLoop(r *bufio.Reader, maxLine int) {
	for {
		line, tooLong, err := readLine(r, maxLine)
		if tooLong {
			c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message is over the %d-byte limit of one stdio line and was skipped; send smaller arguments", maxLine))
		} else if len(bytes.TrimSpace(line)) > 0 {
			if msg, ok := c.decode(line); ok && !c.deliver(readResult{msg: msg}) {
				return
			}
		}
		if err != nil {
			// The SDK ends the session once Read reports the end of the
			// input, and answers not written by then are lost; so a
			// client that writes its requests and closes its end
			// (`printf … | toolhost mcp`) gets every answer first.
			c.waitAnswered(endOfInputWait)
			c.deliver(readResult{err: err})
			return
		}
	}
}

// endOfInputWait bounds how long the end of the input waits for the
// answers to the requests read before it: longer than a call's deadline
// and the default approval timeout, so that only an answer that never
// comes is given up.
const endOfInputWait = 5 * time.Minute

// waitAnswered returns once every request read has been answered, the
// server waits for an answer of the client's (which cannot come after
// the end of the input), the connection is closed, stop ends, or max has
// passed.
func (c *lineConn) waitAnswered(max time.Duration) {
	timeout := time.NewTimer(max)
	defer timeout.Stop()
	for {
		c.mu.Lock()
		n, asked := len(c.inFlight), len(c.asked)
		c.mu.Unlock()
		if n == 0 || asked > 0 {
			return
		}
		select {
		case <-c.answered:
		case <-c.closed:
			return
		case <-c.stop:
			return
		case <-timeout.C:
			return
		}
	}
}

func (c *lineConn) deliver(r readResult) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

// decode parses one line. It answers a line that is not a message and
// returns ok=false for it.
func (c *lineConn) decode(line []byte) (jsonrpc.Message, bool) {
	if !json.Valid(line) {
		c.refuse(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON; send one JSON-RPC message per line")
		return nil, false
	}
	if b := bytes.TrimSpace(line); b[0] == '[' {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one message per line")
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.refuse(idOf(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, false
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		c.track(m)
	case *jsonrpc.Response:
		c.mu.Lock()
		delete(c.asked, m.ID)
		c.mu.Unlock()
	}
	return msg, true
}

// track records calls in flight and marks the ones the client cancels.
func (c *lineConn) track(req *jsonrpc.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		c.inFlight[req.ID] = false
		return
	}
	if req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
		if _, ok := c.inFlight[id]; ok {
			c.inFlight[id] = true
		}
	}
}

// refuse writes an error response. id nil means unknown (JSON null).
func (c *lineConn) refuse(id any, code int64, message string) {
	data, err := json.Marshal(struct {
		JSONRPC string        `json:"jsonrpc"`
		ID      any           `json:"id"`
		Error   jsonrpc.Error `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	if err == nil {
		_ = c.writeLine(data)
	}
}

// idOf returns the "id" of a JSON object if it is a valid JSON-RPC id
// (string or number), else nil.
func idOf(line []byte) any {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return m.ID
	}
	return nil
}

// readLine returns the next line without its newline. A line longer than
// max is consumed up to its newline without being kept, and reported with
// tooLong. err is the reader's error (io.EOF at the end); a last line
// without a newline is returned with it.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			content := len(line) + len(chunk)
			if bytes.HasSuffix(chunk, []byte("\n")) {
				content--
			}
			if content > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, tooLong, err
	}
}
