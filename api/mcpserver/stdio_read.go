package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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

// decode parses one line. It answers a line that is not a message, or a
// request it refuses, and returns ok=false for it.
func (c *lineConn) decode(line []byte) (jsonrpc.Message, bool) {
	if !json.Valid(line) {
		c.refuse(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON; send one JSON-RPC message per line")
		return nil, false
	}
	if b := bytes.TrimSpace(line); b[0] == '[' {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one message per line")
		return nil, false
	}
	if err := checkRequestID(line); err != nil {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, err.Error())
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.refuse(idOf(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, false
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if dup, why := c.track(m); why != "" {
			// A refusal under an id in flight would read as the answer
			// to the request that holds it.
			var id any = m.ID.Raw()
			if dup {
				id = nil
			}
			c.refuse(id, codeOf(dup), why)
			return nil, false
		}
	case *jsonrpc.Response:
		c.mu.Lock()
		delete(c.asked, m.ID)
		c.mu.Unlock()
	}
	return msg, true
}

// track records calls in flight and marks the ones the client cancels. It
// refuses a call (why is not empty) whose id is in flight already, or that
// would be one more than maxUnanswered.
func (c *lineConn) track(req *jsonrpc.Request) (dup bool, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		if _, ok := c.inFlight[req.ID]; ok {
			return true, fmt.Sprintf("invalid request: id %v is the id of a request not yet answered; give every request its own id", req.ID.Raw())
		}
		if len(c.inFlight) >= maxUnanswered {
			return false, fmt.Sprintf("busy: %d requests read from this client are not yet answered, the most toolhost keeps; read the answers on stdout before sending more requests", maxUnanswered)
		}
		c.inFlight[req.ID] = false
		return false, ""
	}
	if req.Method != "notifications/cancelled" {
		return false, ""
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return false, ""
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
		if _, ok := c.inFlight[id]; ok {
			c.inFlight[id] = true
		}
	}
	return false, ""
}

// codeOf is the JSON-RPC error code of a request track refused: a
// duplicate id is an invalid request; too many waiting answers is busy, a
// server error of the implementation's range.
func codeOf(dup bool) int64 {
	if dup {
		return jsonrpc.CodeInvalidRequest
	}
	return -32000
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
