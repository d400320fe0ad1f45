package rawio

import (
	"io"
	"net"
	"syscall"
)

// Listener wraps a TCP listener so that the connections it accepts read
// and write with raw system calls (*Conn). Other connections are returned
// as they are.
type Listener struct{ net.Listener }

// Accept waits for the next connection.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	return &Conn{TCPConn: tc, rc: rc}, nil
}

// Conn is a TCP connection whose Read and Write are raw system calls;
// everything else (deadlines, Close, CloseWrite, addresses) is the
// embedded TCPConn's. Errors are *net.OpError, as a TCPConn's are.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn
}

// Read reads up to len(b) bytes; at the end of the stream it returns
// io.EOF (unwrapped, as net.TCPConn does).
func (c *Conn) Read(b []byte) (int, error) {
	n, err := Read(c.rc, b)
	if err != nil && err != io.EOF {
		return n, c.opError("read", err)
	}
	return n, err
}

// Write writes all of b unless a deadline or a closed connection stops
// it.
func (c *Conn) Write(b []byte) (int, error) {
	n, err := Write(c.rc, b)
	if err != nil {
		return n, c.opError("write", err)
	}
	return n, nil
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
