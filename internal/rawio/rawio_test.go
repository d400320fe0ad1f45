package rawio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serve starts a real http.Server on a rawio Listener on loopback.
func serve(t *testing.T, h http.Handler, tune func(*http.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	if tune != nil {
		tune(srv)
	}
	go srv.Serve(Listener{Listener: ln})
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// Many keep-alive requests with bodies, and answers far larger than a
// socket buffer read slowly (the writes meet EAGAIN and wait): every byte
// arrives, in order.
func TestListenerServesHTTP(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); !ok {
			t.Error("no local address in the request's context")
		}
		if r.URL.Path == "/big" {
			w.Write(big)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		w.Write(append([]byte("echo:"), b...))
	}), nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for i := range 200 {
		body := strings.Repeat(fmt.Sprint(i), i*50)
		resp, err := client.Post("http://"+addr+"/", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "echo:"+body {
			t.Fatalf("request %d: got %d bytes, want %d", i, len(got), len("echo:"+body))
		}
	}
	resp, err := client.Get("http://" + addr + "/big")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for i := 0; ; i++ {
		if i%16 == 0 {
			time.Sleep(time.Millisecond) // a slow reader: the server's socket fills
		}
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), big) {
		t.Fatalf("big answer: got %d bytes, want %d (or different content)", got.Len(), len(big))
	}
}

// The server's deadlines still hold: a client that never finishes its
// headers is cut off at ReadHeaderTimeout.
func TestListenerKeepsDeadlines(t *testing.T) {
	addr := serve(t, http.NotFoundHandler(), func(s *http.Server) { s.ReadHeaderTimeout = 50 * time.Millisecond })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a connection with unfinished headers open for 10 s (its read deadline did not fire)")
	}
}

// A client that goes away cancels its request's context: the server's
// background read sees the end of the stream.
func TestListenerSeesClientLeave(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan error, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			cancelled <- nil
		case <-time.After(10 * time.Second):
			cancelled <- errors.New("the handler's context was not cancelled within 10 s of the client leaving")
		}
	}), nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	c.Close()
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
}

// Conn reports errors as a net.TCPConn does: io.EOF bare at the end of
// the stream, *net.OpError wrapping net.ErrClosed after Close, and a
// timeout at a deadline.
func TestConnErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hangUp := make(chan struct{})
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Write([]byte("hi"))
			<-hangUp
			c.Close()
		}
	}()
	nc, err := Listener{Listener: ln}.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c, ok := nc.(*Conn)
	if !ok {
		t.Fatalf("Accept returned %T, want *rawio.Conn", nc)
	}
	got := make([]byte, 2)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "hi" {
		t.Fatalf("ReadFull = %q, %v; want \"hi\", nil", got, err)
	}
	// The peer is still connected and silent: only the deadline ends the read.
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	var oe *net.OpError
	if _, err := c.Read(make([]byte, 8)); !errors.As(err, &oe) || !oe.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v, want a *net.OpError that is a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	close(hangUp)
	if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the peer closed = %d, %v; want 0, io.EOF", n, err)
	}
	c.Close()
	_, err = c.Write([]byte("x"))
	if !errors.As(err, &oe) || oe.Op != "write" || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want a write *net.OpError wrapping net.ErrClosed", err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
	}
}

// A read that waits on an empty pipe returns once the writer writes, and
// a deadline ends a wait.
func TestReadWritePipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rc, _ := r.SyscallConn()
	wc, _ := w.SyscallConn()
	want := bytes.Repeat([]byte("pipe"), 1<<16) // more than the pipe holds
	go func() {
		time.Sleep(5 * time.Millisecond)
		if n, err := Write(wc, want); n != len(want) || err != nil {
			t.Errorf("Write = %d, %v", n, err)
		}
		w.Close()
	}()
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := Read(rc, buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes, want %d", got.Len(), len(want))
	}
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	defer w2.Close()
	r2.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	rc2, _ := r2.SyscallConn()
	if _, err := Read(rc2, buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read of an empty pipe past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
}

// Pwrite writes at the offset asked, leaves the file's own offset alone,
// and reports the system call's error.
func TestPwrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc, _ := f.SyscallConn()
	if err := Pwrite(rc, []byte("world"), 6); err != nil {
		t.Fatal(err)
	}
	if err := Pwrite(rc, []byte("hello "), 0); err != nil {
		t.Fatal(err)
	}
	if err := Pwrite(rc, nil, 100); err != nil {
		t.Fatalf("an empty write: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "hello world" {
		t.Fatalf("file = %q, want \"hello world\"", got)
	}
	if off, _ := f.Seek(0, io.SeekCurrent); off != 0 {
		t.Fatalf("the file's offset moved to %d", off)
	}
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rrc, _ := ro.SyscallConn()
	if err := Pwrite(rrc, []byte("x"), 0); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Pwrite to a read-only file: %v, want EBADF", err)
	}
	ro.Close()
	if err := Pwrite(rrc, []byte("x"), 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Pwrite to a closed file: %v, want an error saying it is closed", err)
	}
}
