package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolhost/toolhost/internal/strictjson"
)

// loopbackNames are the Host names a local client uses for this machine.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// LoopbackHosts returns the Host values of a server listening on addr
// ("host:port") reached over loopback: localhost, 127.0.0.1 and [::1], each
// with addr's port. Use it to build Options.AllowedHosts when adding
// operator-approved names.
func LoopbackHosts(addr string) ([]string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("httpapi: listen address %q: %w", addr, err)
	}
	out := make([]string, 0, len(loopbackNames))
	for _, n := range loopbackNames {
		out = append(out, net.JoinHostPort(n, port))
	}
	return out, nil
}

// hostPattern is one allowed Host: a name and a port, "" for any port.
type hostPattern struct{ name, port string }

func parseHostPatterns(hosts []string) ([]hostPattern, error) {
	out := make([]hostPattern, 0, len(hosts))
	for _, h := range hosts {
		name, port, ok := splitHost(h)
		if !ok || name == "" {
			return nil, fmt.Errorf("httpapi: allowed host %q: want name or name:port", h)
		}
		out = append(out, hostPattern{name, port})
	}
	return out, nil
}

// splitHost splits a Host header value or allow-list entry into a
// normalised name (lowercase, no brackets, no trailing dot) and its port,
// "" when absent.
func splitHost(h string) (name, port string, ok bool) {
	h = strings.ToLower(strings.TrimSpace(h))
	switch {
	case h == "":
		return "", "", false
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", "", false
		}
		name, rest := h[1:end], h[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return "", "", false
			}
			port = rest[1:]
		}
		h = name
	case strings.Count(h, ":") > 1:
		// A bare IPv6 address (allowed in the allow-list, never in a Host).
		if net.ParseIP(h) == nil {
			return "", "", false
		}
	case strings.Contains(h, ":"):
		var err error
		if h, port, err = net.SplitHostPort(h); err != nil {
			return "", "", false
		}
	}
	if port != "" && !isPort(port) {
		return "", "", false
	}
	name = strings.TrimSuffix(h, ".")
	if !isHostName(name) {
		return "", "", false
	}
	return name, port, true
}

// isHostName accepts the characters of DNS names and IP addresses (after
// lowercasing and unbracketing); anything else cannot be a name of ours.
func isHostName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == '_', c == ':':
		default:
			return false
		}
	}
	return true
}

func isPort(p string) bool {
	if len(p) == 0 || len(p) > 5 {
		return false
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// hostAllowed reports whether a Host value (name[:port], port defaulting to
// defaultPort) is in the allow-list. With no configured list, the loopback
// names on the port the connection arrived on are allowed.
func (a *API) hostAllowed(r *http.Request, value, defaultPort string) bool {
	name, port, ok := splitHost(value)
	if !ok {
		return false
	}
	if port == "" {
		port = defaultPort
	}
	if len(a.hosts) > 0 {
		for _, p := range a.hosts {
			if p.name == name && (p.port == "" || p.port == port) {
				return true
			}
		}
		return false
	}
	local := localPort(r)
	for _, n := range loopbackNames {
		if n == name && (local == "" || local == port) {
			return true
		}
	}
	return false
}

func localPort(r *http.Request) string {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return ""
	}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	return port
}

// checkHostAndOrigin is the DNS-rebinding defence: a page on an attacker's
// domain that resolves to 127.0.0.1 sends its own name as Host, and any
// cross-site request from a browser carries a foreign Origin. A Host
// allow-list stops the first (an Origin-equals-Host check would not: the
// attacker controls both); the Origin allow-list stops the second.
func (a *API) checkHostAndOrigin(r *http.Request) *errorDetail {
	if !a.hostAllowed(r, r.Host, "80") {
		return &errorDetail{CodeForbidden, fmt.Sprintf("Host %q is not an address of this toolhost server; connect to it as localhost or 127.0.0.1 (other names need the operator to allow them)", strictjson.Shown(r.Host))}
	}
	if origins := r.Header.Values("Origin"); len(origins) > 1 {
		// Only the first was checked before, so a foreign second Origin
		// went through: a browser sends one, and whatever sends more
		// cannot be read one way only.
		return &errorDetail{CodeForbidden, fmt.Sprintf("the request has %d Origin headers; send at most one (a browser sends one)", len(origins))}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.User == nil && (u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" {
		def := "80"
		if u.Scheme == "https" {
			def = "443"
		}
		if a.hostAllowed(r, u.Host, def) {
			return nil
		}
	}
	return &errorDetail{CodeForbidden, fmt.Sprintf("requests from origin %q are not allowed: toolhost accepts only its own origin", strictjson.Shown(origin))}
}
