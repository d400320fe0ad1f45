package httpapi

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"
)

// refusalBlocker is a backend that holds the record of a refused request
// until released, so a test can see whether Stop waits for it.
type refusalBlocker struct {
	*fakeBackend
	entered chan struct{}
	release chan struct{}
}

func (r refusalBlocker) RecordRefused(ctx context.Context, tool string, request []byte, err error) {
	close(r.entered)
	<-r.release
}

// A client that sends its body slowly holds a handler that no running
// call accounts for: Stop closes its connection a grace after the last
// call, and returns only after the handler made its record (its caller
// closes the audit log next).
func TestStopWaitsForTheHandlersItCut(t *testing.T) {
	b := refusalBlocker{fakeBackend: newFake(), entered: make(chan struct{}), release: make(chan struct{})}
	api, err := New(b, Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(api, ln.Addr().String(), 0)
	go srv.Serve(ln)
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/tools/echo/call HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{\"argu", ln.Addr(), testToken)
	for api.handlers.count() == 0 {
		time.Sleep(time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- api.Stop(ctx, srv) }()
	select {
	case <-b.entered: // the cut handler records its request
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) before the handler of the slow request recorded it", err)
	case <-ctx.Done():
		t.Fatal("the slow request's connection was not closed within 30 s of Stop")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the handler it cut was still recording", err)
	default:
	}
	close(b.release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
