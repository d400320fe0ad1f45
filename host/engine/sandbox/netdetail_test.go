package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// resetServer is a loopback server that reads a request's header and then
// resets the connection (SO_LINGER 0): before any answer for /none, after
// the response header and part of the body otherwise. It sends each
// client's address (the host's side of the connection) on clients.
func resetServer(t *testing.T) (port string, clients <-chan string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c.RemoteAddr().String()
			br := bufio.NewReader(c)
			line, _ := br.ReadString('\n')
			for {
				l, err := br.ReadString('\n')
				if err != nil || l == "\r\n" {
					break
				}
			}
			if !strings.Contains(line, "/none") {
				fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc")
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port), ch
}

// TestFetchErrorsHideHostNetwork: the error of a failed request, which the
// plugin reads, names neither the local address of the host's connection
// nor the DNS server the host asked, whichever step failed.
func TestFetchErrorsHideHostNetwork(t *testing.T) {
	port, clients := resetServer(t)
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "api.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.9.8.7:53", IsNotFound: true}
	}
	// Real sockets (the default dialer with its address check): loopback
	// needs the operator's grant.
	e := egress{hosts: []string{"api.test", "nx.test"}, allowPrivate: true, lookup: lookup}
	for _, path := range []string{"/body", "/none"} {
		_, err := e.fetch(t.Context(), fetchRequest{URL: "http://api.test:" + port + path})
		client := <-clients
		if err == nil {
			t.Fatalf("%s: the reset connection gave no error", path)
		}
		if strings.Contains(err.Error(), client) {
			t.Errorf("%s: the error names the host's local address %s: %v", path, client, err)
		}
	}
	_, err := e.fetch(t.Context(), fetchRequest{URL: "http://nx.test/"})
	if err == nil || !strings.Contains(err.Error(), "lookup nx.test: no such host") || strings.Contains(err.Error(), "10.9.8.7") {
		t.Errorf("failed lookup: %v, want its reason without the DNS server", err)
	}
}
