package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHostAllowed(t *testing.T) {
	e := egress{hosts: []string{"example.com", "*.example.org", "localhost", "127.0.0.1", "xn--bcher-kva.example"}}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"example.com", true},
		{"EXAMPLE.COM", true},
		{"example.com.", true},
		{"Example.Com.", true},
		{"www.example.com", false}, // exact entry: no subdomains
		{"badexample.com", false},
		{"example.com.evil.net", false},
		{"example.co", false},
		{"example.com..", false},
		{"a.example.org", true},
		{"A.B.EXAMPLE.ORG.", true},
		{"example.org", false}, // "*.example.org" is subdomains only
		{"badexample.org", false},
		{"a.badexample.org", false},
		{".example.org", false},
		{"a..example.org", false},
		{"localhost", true},
		{"localhost.", true},
		{"xn--bcher-kva.example", true},
		{"bücher.example", false},
		{"\u212a.example.org", false}, // KELVIN SIGN lowercases to "k": the checked name must be the resolved one
		{"evil.com\x00.example.org", false},
		{"evil.com%2f.example.org", false},
		{"127.0.0.1", false}, // IP literals never match, even if listed
		{"::1", false},
		{"", false},
		{".", false},
		{"*.example.org", false},
		{strings.Repeat("a.", 130) + "example.org", false},
	} {
		if got := e.hostAllowed(tc.host); got != tc.want {
			t.Errorf("hostAllowed(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	if (egress{}).hostAllowed("example.com") {
		t.Error("an empty allow-list allows a host")
	}
}

func TestCheckURL(t *testing.T) {
	e := egress{hosts: []string{"example.com", "*.example.com"}}
	for _, tc := range []struct {
		url  string
		want string // "" = allowed, else part of the error
	}{
		{"http://example.com/", ""},
		{"https://api.example.com:8443/x?y=1#z", ""},
		{"HTTPS://Example.COM./", ""},
		{"ftp://example.com/", `scheme "ftp" is not allowed`},
		{"file:///etc/passwd", `scheme "file" is not allowed`},
		{"gopher://example.com/", `scheme "gopher"`},
		{"http://user@example.com/", "credentials"},
		{"http://user:pw@example.com/", "credentials"},
		{"http://example.com@evil.net/", "credentials"},
		{"http://evil.net#@example.com/", `host "evil.net"`},
		{"http://evil.net\\@example.com/", `host "evil.net\\"`},
		{"http://example.com.evil.net/", `host "example.com.evil.net"`},
		{"http://badexample.com/", `host "badexample.com"`},
		{"http://127.0.0.1/", `host "127.0.0.1"`},
		{"http://[::1]:80/", `host "::1"`},
		{"http://[::ffff:127.0.0.1]/", `host "::ffff:127.0.0.1"`},
		{"http://169.254.169.254/latest/meta-data/", `host "169.254.169.254"`},
		{"http://0x7f000001/", `host "0x7f000001"`},
		{"http:example.com", `host ""`},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			if tc.want == "" {
				t.Errorf("url.Parse(%q): %v", tc.url, err)
			}
			continue
		}
		err = e.checkURL(u)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkURL(%q) = %v, want allowed", tc.url, err)
		case tc.want != "" && (err == nil || !errors.Is(err, errDenied) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("checkURL(%q) = %v, want a denial with %q", tc.url, err, tc.want)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		blocked bool
	}{
		{"8.8.8.8", false},
		{"93.184.215.14", false},
		{"172.32.0.1", false},
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"100.64.0.1", true},
		{"0.0.0.0", true},
		{"255.255.255.255", true},
		{"224.0.0.1", true},
		{"198.18.0.1", true},
		{"2001:4860:4860::8888", false},
		{"2606:4700::1111", false},
		{"::ffff:8.8.8.8", false},
		{"::1", true},
		{"::", true},
		{"::ffff:127.0.0.1", true},       // IPv4-mapped
		{"::ffff:169.254.169.254", true}, // IPv4-mapped
		{"::127.0.0.1", true},            // IPv4-compatible (deprecated)
		{"::ffff:0:a00:1", true},         // IPv4-translated 10.0.0.1
		{"64:ff9b::a9fe:a9fe", true},     // NAT64 of 169.254.169.254
		{"2002:7f00:1::", true},          // 6to4 of 127.0.0.1
		{"2001:0:4136:e378::1", true},    // Teredo
		{"fe80::1", true},
		{"fe80::1%eth0", true}, // zones hide addresses from netip.Prefix.Contains
		{"fd00::1", true},
		{"fc00::1", true},
		{"fec0::1", true},
		{"ff02::1", true},
	} {
		a := netip.MustParseAddr(tc.addr)
		err := egress{}.checkAddr(a)
		if blocked := err != nil; blocked != tc.blocked {
			t.Errorf("checkAddr(%s) = %v, want blocked=%v", tc.addr, err, tc.blocked)
		} else if blocked && !errors.Is(err, errDenied) {
			t.Errorf("checkAddr(%s) = %v, not a denial", tc.addr, err)
		}
		// The operator's grant opens every valid address.
		if err := (egress{allowPrivate: true}).checkAddr(a); err != nil {
			t.Errorf("with the private grant, checkAddr(%s) = %v", tc.addr, err)
		}
	}
	if err := (egress{allowPrivate: true}).checkAddr(netip.Addr{}); err == nil {
		t.Error("the zero address is allowed")
	}
}

func TestDialControl(t *testing.T) {
	e := egress{}
	for addr, blocked := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:443": true, "[fe80::1%lo]:80": true, "[::ffff:10.0.0.1]:80": true,
		"93.184.215.14:80": false, "[2606:4700::1111]:443": false, "not an address": true,
	} {
		if err := e.control("tcp", addr, nil); (err != nil) != blocked {
			t.Errorf("control(%q) = %v, want blocked=%v", addr, err, blocked)
		}
	}
}

// fakeNet resolves names from a table and connects "public" addresses to
// local test servers, so the address policy can be tested end to end
// without reaching the Internet: the check sees the public address, the
// socket goes to 127.0.0.1.
type fakeNet struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	lookups map[string]int
	routes  map[netip.Addr]string // public address -> local listener
	dialed  []netip.Addr
	// rebind answers once with first, then with second.
	rebind        string
	first, second netip.Addr
}

func (f *fakeNet) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups[host]++
	if host == f.rebind {
		if f.lookups[host] == 1 {
			return []netip.Addr{f.first}, nil
		}
		return []netip.Addr{f.second}, nil
	}
	if a, ok := f.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (f *fakeNet) dial(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.dialed = append(f.dialed, ap.Addr())
	target, ok := f.routes[ap.Addr()]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("dial %s: no route (test network)", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, target)
}

func (f *fakeNet) dialedAddrs() []netip.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.dialed)
}

var (
	publicA = netip.MustParseAddr("93.184.215.14")
	publicB = netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c")
)

func newFakeNet(a, b *httptest.Server) *fakeNet {
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	return &fakeNet{
		names: map[string][]netip.Addr{
			"api.example.com":      {publicA},
			"www.cdn.example.com":  {publicB},
			"private.example.com":  addrs("10.0.0.7"),
			"mapped.example.com":   addrs("::ffff:127.0.0.1"),
			"metadata.example.com": addrs("169.254.169.254"),
			"v6loop.example.com":   addrs("::1"),
			"nat64.example.com":    addrs("64:ff9b::a9fe:a9fe"),
			"mixed.example.com":    {netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("192.168.0.9"), publicA},
		},
		lookups: map[string]int{},
		routes: map[netip.Addr]string{
			publicA: a.Listener.Addr().String(),
			publicB: b.Listener.Addr().String(),
		},
		rebind: "rebind.example.com", first: publicA, second: netip.MustParseAddr("127.0.0.1"),
	}
}

// portOf is the port of an httptest server, for URLs on fake names.
func portOf(s *httptest.Server) string {
	return strconv.Itoa(s.Listener.Addr().(*net.TCPAddr).Port)
}

func TestFetchRedirectsAndAddresses(t *testing.T) {
	var srvA *httptest.Server
	srvB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from B")
	}))
	defer srvB.Close()
	srvA = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			to := r.URL.Query().Get("to")
			to = strings.ReplaceAll(to, "PORTA", portOf(srvA))
			to = strings.ReplaceAll(to, "PORTB", portOf(srvB))
			http.Redirect(w, r, to, http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			fmt.Fprint(w, "hello from A")
		}
	}))
	defer srvA.Close()

	hosts := []string{"api.example.com", "*.cdn.example.com", "private.example.com", "mapped.example.com",
		"metadata.example.com", "v6loop.example.com", "nat64.example.com", "mixed.example.com", "rebind.example.com"}
	a := "http://api.example.com:" + portOf(srvA)

	for _, tc := range []struct {
		name     string
		url      string
		wantBody string // "" = want an error
		wantErr  string
		denied   bool
	}{
		{"allowed host", a + "/hello", "hello from A", "", false},
		{"redirect to an allowed host", a + "/redirect?to=http://www.cdn.example.com:PORTB/", "hello from B", "", false},
		{"redirect to a forbidden host", a + "/redirect?to=http://forbidden.test/", "", `host "forbidden.test" is not in the plugin's allowed_hosts`, true},
		{"redirect to 127.0.0.1", a + "/redirect?to=http://127.0.0.1:PORTA/", "", `host "127.0.0.1" is not in`, true},
		{"redirect to cloud metadata", a + "/redirect?to=http://169.254.169.254/latest/meta-data/", "", `host "169.254.169.254" is not in`, true},
		{"redirect to [::1]", a + "/redirect?to=http://[::1]:PORTA/", "", `host "::1" is not in`, true},
		{"redirect to mapped IPv6", a + "/redirect?to=http://[::ffff:127.0.0.1]:PORTA/", "", `host "::ffff:127.0.0.1" is not in`, true},
		{"redirect to another scheme", a + "/redirect?to=file:///etc/passwd", "", `scheme "file" is not allowed`, true},
		{"redirect adding credentials", a + "/redirect?to=http://u:p@api.example.com:PORTA/", "", "credentials", true},
		{"redirect to a name in a private range", a + "/redirect?to=http://private.example.com:PORTA/", "", "private.example.com resolves to 10.0.0.7, which is in a private", true},
		{"redirect to a name on IPv4-mapped loopback", a + "/redirect?to=http://mapped.example.com:PORTA/", "", "mapped.example.com resolves to 127.0.0.1, which is in a private", true},
		{"redirect to a name on the metadata address", a + "/redirect?to=http://metadata.example.com/", "", "resolves to 169.254.169.254, which is in", true},
		{"redirect to a name on ::1", a + "/redirect?to=http://v6loop.example.com:PORTA/", "", "resolves to ::1, which is in", true},
		{"redirect to a name on NAT64 metadata", a + "/redirect?to=http://nat64.example.com/", "", "resolves to 64:ff9b::a9fe:a9fe, which is in", true},
		{"name in a private range", "http://private.example.com:" + portOf(srvA) + "/", "", "private.example.com resolves to 10.0.0.7, which is in a private", true},
		{"private answers skipped, public used", "http://mixed.example.com:" + portOf(srvA) + "/", "hello from A", "", false},
		{"DNS rebinding between hops", "http://rebind.example.com:" + portOf(srvA) + "/redirect?to=http://rebind.example.com:PORTA/x", "", "rebind.example.com resolves to 127.0.0.1, which is in a private", true},
		{"redirect loop", a + "/loop", "", "stopped after 5 redirects", false},
		{"name that does not resolve", "http://nowhere.cdn.example.com/", "", "request failed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := newFakeNet(srvA, srvB)
			e := egress{hosts: hosts, lookup: fn.lookup, dial: fn.dial}
			resp, err := e.fetch(t.Context(), fetchRequest{URL: tc.url})
			if tc.wantBody != "" {
				if err != nil || resp.Body != tc.wantBody || resp.Status != 200 {
					t.Fatalf("got %+v, %v; want 200 %q", resp, err, tc.wantBody)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, errDenied) != tc.denied {
				t.Fatalf("got %+v, %v; want an error with %q (denial: %v)", resp, err, tc.wantErr, tc.denied)
			}
			for _, d := range fn.dialedAddrs() {
				if d != publicA && d != publicB {
					t.Fatalf("dialed %s, a blocked address", d)
				}
			}
		})
	}
}

// TestFetchRealLoopback uses the real resolver and sockets: "localhost"
// resolves to loopback, refused without the operator's grant.
func TestFetchRealLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "local")
	}))
	defer srv.Close()
	u := "http://localhost:" + portOf(srv) + "/"

	_, err := egress{hosts: []string{"localhost"}}.fetch(t.Context(), fetchRequest{URL: u})
	if !errors.Is(err, errDenied) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("without the grant: %v, want a denial", err)
	}
	resp, err := egress{hosts: []string{"localhost"}, allowPrivate: true}.fetch(t.Context(), fetchRequest{URL: u})
	if err != nil || resp.Body != "local" {
		t.Fatalf("with the grant: %+v, %v", resp, err)
	}
}

func TestFetchBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		switch r.URL.Path {
		case "/sized":
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.Write(bytes.Repeat([]byte("a"), n))
		case "/chunked": // no Content-Length: the cap must hold while reading
			for sent := 0; sent < n; sent += 1 << 16 {
				w.Write(bytes.Repeat([]byte("a"), min(1<<16, n-sent)))
				w.(http.Flusher).Flush()
			}
		case "/lying": // Content-Length smaller than the body
			w.Header().Set("Content-Length", "10")
			w.Write(bytes.Repeat([]byte("a"), 10))
		case "/to-sized":
			http.Redirect(w, r, "/sized?"+r.URL.RawQuery, http.StatusFound)
		case "/binary":
			w.Write([]byte{0, 0xff, 0xfe, 'x'})
		case "/echo":
			var b bytes.Buffer
			b.ReadFrom(r.Body)
			fmt.Fprintf(w, "%s %s %s %s", r.Method, r.Header.Get("X-A"), r.Header.Get("User-Agent"), b.String())
		}
	}))
	defer srv.Close()
	fn := &fakeNet{lookups: map[string]int{}, names: map[string][]netip.Addr{"api.example.com": {publicA}},
		routes: map[netip.Addr]string{publicA: srv.Listener.Addr().String()}}
	e := egress{hosts: []string{"api.example.com"}, lookup: fn.lookup, dial: fn.dial}
	base := "http://api.example.com:" + portOf(srv)
	max := strconv.Itoa(MaxFetchResponseBytes)
	over := strconv.Itoa(MaxFetchResponseBytes + 1)

	for _, tc := range []struct {
		name      string
		req       fetchRequest
		wantErr   string
		wantLen   int
		truncated bool
	}{
		{"at the cap", fetchRequest{URL: base + "/sized?n=" + max}, "", MaxFetchResponseBytes, false},
		{"over the cap, sized", fetchRequest{URL: base + "/sized?n=" + over}, "larger than the limit", 0, false},
		{"over the cap, chunked", fetchRequest{URL: base + "/chunked?n=" + over}, "larger than the limit", 0, false},
		{"far over the cap, chunked", fetchRequest{URL: base + "/chunked?n=" + strconv.Itoa(64<<20)}, "larger than the limit", 0, false},
		{"cut on request", fetchRequest{URL: base + "/chunked?n=" + over, MaxBodyBytes: 1000}, "", 1000, true},
		{"cut larger than the body", fetchRequest{URL: base + "/sized?n=10", MaxBodyBytes: 1000}, "", 10, false},
		{"HEAD of a body over the cap", fetchRequest{URL: base + "/sized?n=" + strconv.Itoa(64<<20), Method: "head"}, "", 0, false},
		{"HEAD redirected", fetchRequest{URL: base + "/to-sized?n=" + over, Method: "HEAD"}, "", 0, false},
		{"cut above the cap is the cap", fetchRequest{URL: base + "/sized?n=" + over, MaxBodyBytes: 1 << 30}, "larger than the limit", 0, false},
		{"negative cut", fetchRequest{URL: base + "/sized?n=1", MaxBodyBytes: -1}, "must not be negative", 0, false},
		{"request body too large", fetchRequest{URL: base + "/echo", Method: "POST", Body: strings.Repeat("b", MaxFetchRequestBytes+1)}, "request body is", 0, false},
		{"unsupported method", fetchRequest{URL: base + "/echo", Method: "CONNECT"}, `method "CONNECT" is not supported`, 0, false},
		{"relative URL", fetchRequest{URL: "api.example.com/x"}, "must be absolute", 0, false},
		{"unparsable URL", fetchRequest{URL: "http://[::1"}, "bad url", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := e.fetch(t.Context(), tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %d bytes, %v; want an error with %q", len(resp.Body), err, tc.wantErr)
				}
				if errors.Is(err, errDenied) {
					t.Fatalf("%v is reported as a permission denial", err)
				}
				return
			}
			if err != nil || len(resp.Body) != tc.wantLen || resp.Truncated != tc.truncated {
				t.Fatalf("got %d bytes, truncated=%v, %v; want %d, %v", len(resp.Body), resp.Truncated, err, tc.wantLen, tc.truncated)
			}
		})
	}

	t.Run("binary body", func(t *testing.T) {
		resp, err := e.fetch(t.Context(), fetchRequest{URL: base + "/binary"})
		if err != nil || resp.BodyEncoding != "base64" || resp.Body != base64.StdEncoding.EncodeToString([]byte{0, 0xff, 0xfe, 'x'}) {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
	t.Run("method, headers, body", func(t *testing.T) {
		resp, err := e.fetch(t.Context(), fetchRequest{
			URL: base + "/echo", Method: "put", Body: "payload",
			Headers: map[string]string{"X-A": "1", "Host": "evil.test", "Content-Length": "1", "Transfer-Encoding": "chunked"},
		})
		if err != nil || resp.Body != "PUT 1 toolhost-plugin payload" || resp.Headers["content-type"] == "" {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
}

// TestFetchCancelled: the call's deadline bounds a request to a server
// that never answers.
func TestFetchCancelled(t *testing.T) {
	var hits atomic.Int32
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := egress{hosts: []string{"localhost"}, allowPrivate: true}.fetch(ctx, fetchRequest{URL: "http://localhost:" + portOf(srv) + "/"})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") || hits.Load() != 1 {
		t.Fatalf("got %v after %d requests, want a deadline error", err, hits.Load())
	}
}
