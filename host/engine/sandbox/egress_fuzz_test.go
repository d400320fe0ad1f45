package sandbox

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzEgressDestination: a plugin's fetch URL and the addresses its names
// resolve to are untrusted. checkURL allows exactly what the signed
// allow-list names (restated here independently of hostAllowed), every
// refusal is a policy error that says why, and the name the HTTP transport
// then resolves is the name that was checked — not another reading of the
// same URL. checkAddr allows no address the standard library classifies as
// loopback, private, link-local, multicast or unspecified, in any of its
// forms (IPv4-mapped, zoned).
func FuzzEgressDestination(f *testing.F) {
	for _, s := range []string{
		"https://api.example.com/v1?q=1", "http://a.example.org:8080/p#f", "https://API.Example.COM./",
		"http://user:pw@api.example.com/", "http://[::1]/", "http://127.0.0.1/", "http://0x7f.1/",
		"https://api.example.com%2f@evil.com/", `http://api.example.com\@evil.com/`, "https://a.example.org#@evil.com",
		"ftp://api.example.com/", "http://api.example.com:99999/", "http://xn--bcher-kva.example.org/",
		"http://b\u00fccher.example.org/", "http://api.example.com%00.evil.net/", "https://example.org/",
		"http://[fe80::1%25eth0]/", "https://a.b.example.org.:443/x/../y", "HTTPS://api.example.com",
	} {
		f.Add(s, []byte{127, 0, 0, 1}, "")
	}
	f.Add("http://a.example.org/", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 169, 254, 169, 254}, "")
	f.Add("http://a.example.org/", []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "eth0")
	f.Add("http://a.example.org/", []byte{93, 184, 216, 34}, "")
	f.Add("http://a.example.org/", []byte{0x20, 0x01, 0x48, 0x60, 0x48, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x88}, "")
	hosts := []string{"api.example.com", "*.example.org"}
	public := netip.MustParseAddr("93.184.216.34")
	errStop := errors.New("fuzz: no dialing")
	f.Fuzz(func(t *testing.T, raw string, ip []byte, zone string) {
		checkAddrAgainstStdlib(t, ip, zone)

		u, err := url.Parse(raw)
		if err != nil || !u.IsAbs() {
			return
		}
		e := egress{hosts: hosts}
		if err := e.checkURL(u); err != nil {
			if !errors.Is(err, errDenied) || !strings.Contains(err.Error(), ": ") {
				t.Fatalf("refusal of %q is not a policy error that says why: %v", raw, err)
			}
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil {
			t.Fatalf("allowed %q: scheme %q, user %v", raw, u.Scheme, u.User)
		}
		checked := strings.TrimSuffix(u.Hostname(), ".")
		if !listed(hosts, checked) {
			t.Fatalf("allowed %q, whose host %q the allow-list %q does not name", raw, checked, hosts)
		}

		var resolved []string
		e.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
			resolved = append(resolved, host)
			return []netip.Addr{public}, nil
		}
		e.dial = func(context.Context, string, string) (net.Conn, error) { return nil, errStop }
		_, _ = e.fetch(context.Background(), fetchRequest{URL: raw})
		for _, r := range resolved {
			if !strings.EqualFold(strings.TrimSuffix(r, "."), checked) {
				t.Fatalf("%q: checked host %q, but the transport resolved %q", raw, checked, r)
			}
		}
	})
}

// listed is the allow-list rule restated: only ASCII names, compared
// without case, exactly or as a subdomain of a "*." entry.
func listed(hosts []string, host string) bool {
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return false
		}
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	host = strings.ToLower(host)
	for _, h := range hosts {
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) && len(host) > len(suffix)+1 {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

func checkAddrAgainstStdlib(t *testing.T, ip []byte, zone string) {
	t.Helper()
	var a netip.Addr
	switch len(ip) {
	case 4:
		a = netip.AddrFrom4([4]byte(ip))
	case 16:
		a = netip.AddrFrom16([16]byte(ip)).WithZone(zone)
	default:
		return
	}
	if err := (egress{}).checkAddr(a); err != nil {
		if !errors.Is(err, errDenied) {
			t.Fatalf("checkAddr(%s) refused without a policy error: %v", a, err)
		}
		return
	}
	u := a.Unmap()
	if u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsLinkLocalMulticast() ||
		u.IsInterfaceLocalMulticast() || u.IsMulticast() || u.IsUnspecified() {
		t.Fatalf("checkAddr allowed %s", a)
	}
	if (egress{allowPrivate: true}).checkAddr(a) != nil {
		t.Fatalf("the private-network grant refused %s", a)
	}
}
