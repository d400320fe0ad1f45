package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Graceful shutdown with an MCP client attached (an open GET stream) and a
// call in flight: the call is answered, then the server stops well before
// its deadline instead of waiting on the stream.
func TestGracefulShutdown(t *testing.T) {
	b := newFake()
	bl := block(b)
	api, err := New(b, Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(api, ln.Addr().String(), 0)
	srv.RegisterOnShutdown(func() { _ = api.Shutdown(context.Background()) })
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()

	client := &http.Client{Transport: bearer{testToken, http.DefaultTransport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "shutdown-test", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: client, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	callDone := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/tools/slow/call", strings.NewReader(`{}`))
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			callDone <- 0
			return
		}
		resp.Body.Close()
		callDone <- resp.StatusCode
	}()
	<-bl.entered

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	start := time.Now()
	go func() { shut <- srv.Shutdown(ctx) }()
	time.Sleep(100 * time.Millisecond)
	close(bl.release)
	if got := <-callDone; got != 200 {
		t.Errorf("in-flight call = %d, want 200", got)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v after %v", err, time.Since(start))
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Shutdown took %v", time.Since(start))
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
}
