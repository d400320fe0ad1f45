package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Egress limits for the fetch host function.
const (
	MaxFetchResponseBytes = 4 << 20
	MaxFetchRequestBytes  = 1 << 20
	maxRedirects          = 5
	fetchTimeout          = 30 * time.Second
)

// errDenied marks a request the plugin's grants do not allow.
var errDenied = errors.New("permission denied")

// egress decides which URLs and addresses a plugin may reach.
type egress struct {
	hosts        []string // from the signed manifest
	allowPrivate bool     // operator's explicit grant for private/loopback addresses
}

func (e egress) hostAllowed(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, pattern := range e.hosts {
		if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == pattern {
			return true
		}
	}
	return false
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
// shared address space, multicast and the other special-purpose ranges.
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
		"2002::/16", "fc00::/7", "fe80::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

func (e egress) checkAddr(addr netip.Addr) error {
	addr = addr.Unmap()
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

// client returns an HTTP client that re-checks every redirect against the
// allow-list and every connected address against the blocked ranges (so
// DNS answers in private ranges and DNS rebinding are refused too).
func (e egress) client() *http.Client {
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot check address %q", errDenied, address)
			}
			return e.checkAddr(ap.Addr())
		},
	}
	tr := &http.Transport{
		Proxy:                  nil, // never an environment proxy: it would bypass the address checks
		DialContext:            dialer.DialContext,
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
				return fmt.Errorf("%w: more than %d redirects", errDenied, maxRedirects)
			}
			return e.checkURL(req.URL)
		},
	}
}

// fetch performs one request for a plugin.
func (e egress) fetch(ctx context.Context, req fetchRequest) (fetchResponse, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return fetchResponse{}, fmt.Errorf("bad url: %v", err)
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
		return fetchResponse{}, fmt.Errorf("method %q is not supported", req.Method)
	}
	if len(req.Body) > MaxFetchRequestBytes {
		return fetchResponse{}, fmt.Errorf("request body is %d bytes, the limit is %d", len(req.Body), MaxFetchRequestBytes)
	}
	hr, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(req.Body))
	if err != nil {
		return fetchResponse{}, err
	}
	for k, v := range req.Headers {
		switch strings.ToLower(k) {
		case "host", "connection", "proxy-authorization", "transfer-encoding", "te", "upgrade":
			continue
		}
		hr.Header.Set(k, v)
	}
	if hr.Header.Get("User-Agent") == "" {
		hr.Header.Set("User-Agent", "toolhost-plugin")
	}
	resp, err := e.client().Do(hr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && errors.Is(ue.Err, errDenied) {
			return fetchResponse{}, ue.Err
		}
		if errors.Is(err, errDenied) {
			return fetchResponse{}, err
		}
		return fetchResponse{}, fmt.Errorf("request failed: %v", err)
	}
	defer resp.Body.Close()
	body := make([]byte, 0, 4096)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if len(body)+n > MaxFetchResponseBytes {
			return fetchResponse{}, fmt.Errorf("response is larger than %d bytes", MaxFetchResponseBytes)
		}
		body = append(body, buf[:n]...)
		if rerr != nil {
			break
		}
	}
	out := fetchResponse{Status: resp.StatusCode, Headers: map[string]string{}, Body: string(body), URL: resp.Request.URL.String()}
	for k, v := range resp.Header {
		out.Headers[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	return out, nil
}

type fetchRequest struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

type fetchResponse struct {
	Status  int               `json:"status,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	Error   string            `json:"error,omitempty"`
}
