package sandbox

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host/engine"
)

// Egress limits for the fetch host function.
const (
	// MaxFetchResponseBytes bounds a response body. A larger body is an
	// error unless the request asked for a cut (max_body_bytes).
	MaxFetchResponseBytes = 4 << 20
	MaxFetchRequestBytes  = 1 << 20
	// MaxFetchesPerCall bounds the requests one tool call may make.
	MaxFetchesPerCall = 64
	maxRedirects      = 5
	maxDialAddrs      = 8
	fetchTimeout      = 30 * time.Second
	dialTimeout       = 10 * time.Second
)

// errDenied marks a request the plugin's grants do not allow.
var errDenied = errors.New("permission denied")

// egress decides which URLs and addresses a plugin may reach.
//
// Two checks, both on every hop: the URL's host must be in the signed
// allowed_hosts (so a redirect cannot leave the list), and every address
// actually dialed must be outside the blocked ranges (so a DNS answer in
// a private range, or a name that rebinds between checks, cannot reach the
// host's own network). Names are resolved here and the checked address is
// the one dialed; the dialer's Control re-checks the socket address.
type egress struct {
	plugin       string   // the plugin's name, for messages
	hosts        []string // from the signed manifest
	allowPrivate bool     // operator's explicit grant for private/loopback addresses
	secrets      []engine.Secret

	// lookup and dial stand in for DNS and the socket layer in tests; nil
	// means the real ones. Both run after the policy decided, never instead.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, network, address string) (net.Conn, error)
}

// hostAllowed reports whether host (a URL's Hostname) matches
// allowed_hosts: exactly, or as a subdomain of a "*.domain" pattern. IP
// literals never match (allowed_hosts holds names only), nor does anything
// that is not an ASCII DNS name: the name checked must be the name resolved.
func (e egress) hostAllowed(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if !isDNSName(host) {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	host = strings.ToLower(host)
	for _, pattern := range e.hosts {
		pattern = strings.ToLower(strings.TrimSuffix(pattern, "."))
		if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
			if suffix != "" && strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == pattern {
			return true
		}
	}
	return false
}

// isDNSName reports whether s is dot-separated non-empty labels of ASCII
// letters, digits, '-' and '_'.
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func (e egress) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q is not allowed (use http or https)", errDenied, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: URLs with credentials are not allowed", errDenied)
	}
	if !e.hostAllowed(u.Hostname()) {
		return fmt.Errorf("%w: host %q is not in the plugin's allowed_hosts", errDenied, u.Hostname())
	}
	return nil
}

// blockedPrefixes are never reachable without the operator's grant:
// loopback, private, link-local (cloud metadata lives at 169.254.169.254),
// shared address space, multicast and the other special-purpose ranges,
// and the IPv6 forms that embed or translate IPv4 addresses (NAT64, 6to4,
// Teredo, IPv4-compatible, IPv4-translated).
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/96", "::1/128", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
		"2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

func (e egress) checkAddr(addr netip.Addr) error {
	// netip.Prefix.Contains is false for zoned addresses and does not see
	// IPv4 inside IPv4-mapped IPv6: normalise both away first.
	addr = addr.Unmap().WithZone("")
	if !addr.IsValid() {
		return fmt.Errorf("%w: invalid address", errDenied)
	}
	if e.allowPrivate {
		return nil
	}
	for _, p := range blockedPrefixes {
		if p.Contains(addr) {
			return fmt.Errorf("%w: address %s is in a private, loopback, link-local or reserved range", errDenied, addr)
		}
	}
	return nil
}

// dialContext resolves the host of address, drops every answer the policy
// blocks, and dials the remaining addresses in order.
func (e egress) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("bad port %q", portStr)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := e.lookup
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		if addrs, err = lookup(ctx, host); err != nil {
			return nil, withoutResolver(err) // see netdetail.go
		}
	}
	var allowed []netip.Addr
	var denied netip.Addr
	for _, a := range addrs {
		if err := e.checkAddr(a); err != nil {
			if !denied.IsValid() {
				denied = a
			}
			continue
		}
		allowed = append(allowed, a.Unmap())
	}
	if len(allowed) == 0 {
		if denied.IsValid() {
			return nil, fmt.Errorf("%w: %s resolves to %s, which is in a private, loopback, link-local or reserved range", errDenied, host, denied.Unmap().WithZone(""))
		}
		return nil, fmt.Errorf("no address found for %s", host)
	}
	allowed = allowed[:min(len(allowed), maxDialAddrs)]
	dial := e.dial
	if dial == nil {
		d := &net.Dialer{Timeout: dialTimeout, Control: e.control}
		dial = d.DialContext
	}
	var lastErr error
	for i, a := range allowed {
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok && len(allowed)-i > 1 {
			// Share the time left between the addresses still to try, as
			// net.Dialer does, so one black-holed address cannot use it all.
			part := max(time.Until(dl)/time.Duration(len(allowed)-i), 2*time.Second)
			dctx, cancel = context.WithTimeout(ctx, part)
		}
		c, err := dial(dctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		cancel()
		if err == nil {
			return localHidden{c}, nil // see netdetail.go
		}
		lastErr = withoutLocalAddr(err)
	}
	return nil, lastErr
}

// control re-checks the address a socket is about to connect to.
func (e egress) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check address %q", errDenied, address)
	}
	return e.checkAddr(ap.Addr())
}

// client returns an HTTP client that re-checks every redirect against the
// allow-list and every dialed address against the blocked ranges.
func (e egress) client(secrets []engine.Secret) *http.Client {
	tr := &http.Transport{
		Proxy:                  nil, // never an environment proxy: it would bypass the address checks
		DialContext:            e.dialContext,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  fetchTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		DisableKeepAlives:      true,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   fetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if err := e.checkURL(req.URL); err != nil {
				return err
			}
			// The next hop carries each secret only if its host is bound
			// (and, without the private-network grant, only over https).
			e.applySecrets(req.Header, secrets, req.URL)
			return nil
		},
	}
}

// fetch performs one request for a plugin. Errors wrapping errDenied are
// policy refusals; the others are bad requests or network failures.
func (e egress) fetch(ctx context.Context, req fetchRequest) (fetchResponse, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return fetchResponse{}, fmt.Errorf("bad url: %v", err)
	}
	if !u.IsAbs() {
		return fetchResponse{}, fmt.Errorf("bad url %q: it must be absolute (http:// or https://)", truncateMsg(req.URL, 200))
	}
	if err := e.checkURL(u); err != nil {
		return fetchResponse{}, err
	}
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = http.MethodGet
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return fetchResponse{}, fmt.Errorf("method %q is not supported", truncateMsg(req.Method, 32))
	}
	if len(req.Body) > MaxFetchRequestBytes {
		return fetchResponse{}, fmt.Errorf("request body is %d bytes, the limit is %d", len(req.Body), MaxFetchRequestBytes)
	}
	if req.MaxBodyBytes < 0 {
		return fetchResponse{}, errors.New("max_body_bytes must not be negative")
	}
	hr, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(req.Body))
	if err != nil {
		return fetchResponse{}, err
	}
	for k, v := range req.Headers {
		switch strings.ToLower(k) {
		case "host", "connection", "proxy-authorization", "transfer-encoding", "te", "upgrade", "content-length":
			continue
		}
		hr.Header.Set(k, v)
	}
	if hr.Header.Get("User-Agent") == "" {
		hr.Header.Set("User-Agent", "toolhost-plugin")
	}
	secrets, err := e.requestedSecrets(req.Secrets, u)
	if err != nil {
		return fetchResponse{}, err
	}
	e.applySecrets(hr.Header, secrets, u)
	if len(secrets) > 0 {
		// The plugin's own Accept-Encoding would get it the answer
		// compressed, where an echoed secret cannot be found and hidden;
		// without it the client asks for gzip and decompresses itself.
		hr.Header.Del("Accept-Encoding")
	}
	c := e.client(secrets)
	defer c.CloseIdleConnections()
	// What the answer brings back of a secret is hidden from the plugin
	// (see secrets.go): its errors, URL, headers and body.
	rd := newRedactor(secrets)
	resp, err := c.Do(hr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && errors.Is(ue.Err, errDenied) {
			return fetchResponse{}, rd.error(ue.Err)
		}
		if errors.Is(err, errDenied) {
			return fetchResponse{}, rd.error(err)
		}
		return fetchResponse{}, rd.error(fmt.Errorf("request failed: %v", err))
	}
	defer resp.Body.Close()

	limit, cut := int64(MaxFetchResponseBytes), false
	if req.MaxBodyBytes > 0 && req.MaxBodyBytes < MaxFetchResponseBytes {
		limit, cut = req.MaxBodyBytes, true
	}
	// A HEAD answer's Content-Length is the size of the body a GET would
	// get; it has none itself.
	if !cut && resp.ContentLength > limit && resp.Request.Method != http.MethodHead {
		return fetchResponse{}, fmt.Errorf("response is %d bytes, larger than the limit of %d (ask for a cut with max_body_bytes)", resp.ContentLength, limit)
	}
	// A secret that starts before the cut is read whole, so that it is
	// hidden whole rather than cut into a prefix the plugin could read.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1+int64(rd.longest)))
	if err != nil {
		return fetchResponse{}, rd.error(fmt.Errorf("reading the response failed: %v", err))
	}
	out := fetchResponse{Status: resp.StatusCode, Headers: map[string]string{}, URL: rd.string(resp.Request.URL.String())}
	over := int64(len(raw)) > limit
	if over && !cut {
		return fetchResponse{}, fmt.Errorf("response is larger than the limit of %d bytes (ask for a cut with max_body_bytes)", limit)
	}
	body := rd.bytes(raw)
	if over {
		body, out.Truncated = body[:min(int64(len(body)), limit)], true
	}
	// JSON strings hold text: bytes that are not UTF-8 would be mangled.
	if utf8.Valid(body) {
		out.Body = string(body)
	} else {
		out.Body, out.BodyEncoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	for k, v := range resp.Header {
		out.Headers[strings.ToLower(k)] = rd.string(strings.Join(v, ", "))
	}
	return out, nil
}

// fetchRequest is the JSON a plugin passes to toolhost.http_fetch.
type fetchRequest struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// MaxBodyBytes, when set below MaxFetchResponseBytes, cuts the
	// response body there (truncated: true) instead of failing.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// Secrets names the plugin's secrets the host adds to the request (as
	// their bound headers), each only where it is bound.
	Secrets []string `json:"secrets,omitempty"`
}

// fetchResponse is the JSON toolhost.http_fetch answers.
type fetchResponse struct {
	Status  int               `json:"status,omitempty"`
	URL     string            `json:"url,omitempty"` // after redirects
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// BodyEncoding is "base64" when the body is not UTF-8 text.
	BodyEncoding string `json:"body_encoding,omitempty"`
	Truncated    bool   `json:"truncated,omitempty"`
	Error        string `json:"error,omitempty"`
}
