package sandbox

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/engine"
)

// TestReflectedSecretIsHidden: a real loopback server bound to the secrets
// echoes what it got in every place an answer can carry it back. The
// plugin's view of each answer (the response JSON http_fetch writes, or
// the error) never holds a value, in any of the forms an echo takes, and
// says where one was.
func TestReflectedSecretIsHidden(t *testing.T) {
	// A plain token, and one with characters that URL and JSON encode.
	odd := `p@ss w/rd&"<q>+`
	secrets := append(testSecrets(), engine.Secret{Name: "odd", Hosts: []string{"api.test"}, Header: "X-Odd", Value: odd})
	forms := func(v string) []string {
		return []string{v, url.QueryEscape(v), url.PathEscape(v), jsonString(v, true), jsonString(v, false), html.EscapeString(v)}
	}
	if got := jsonString(odd, false); got != `p@ss w/rd&\"<q>+` {
		t.Fatalf("jsonString(%q, false) = %q", odd, got)
	}
	srv := newHeaderLog(t, func(w http.ResponseWriter, r *http.Request) bool {
		tok, o := r.Header.Get("X-Api-Key"), r.Header.Get("X-Odd")
		switch r.URL.Path {
		case "/header":
			w.Header().Set("X-Echo", "key="+tok)
			w.Header().Add("Www-Authenticate", `Bearer error="invalid_token" token="`+o+`"`)
		case "/body":
			fmt.Fprintf(w, "invalid api key %s / %s", tok, o)
		case "/json":
			json.NewEncoder(w).Encode(map[string]string{"got": tok, "odd": o})
		case "/json-plain": // as encoders without Go's HTML escaping write it
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			enc.Encode(map[string]string{"got": tok, "odd": o})
		case "/html":
			fmt.Fprintf(w, "<p>%s %s</p>", html.EscapeString(tok), html.EscapeString(o))
		case "/gzip": // compressed when the client says it takes it
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				fmt.Fprintf(w, "plain %s %s", tok, o)
				return true
			}
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprintf(zw, "zipped %s %s", tok, o)
			zw.Close()
			return true
		case "/binary":
			w.Write(append([]byte{0xff, 0xfe}, tok...))
		case "/query":
			http.Redirect(w, r, "/landing?k="+url.QueryEscape(tok)+"&o="+url.QueryEscape(o), http.StatusFound)
			return true
		case "/path":
			http.Redirect(w, r, "/landing/"+url.PathEscape(o)+"/"+tok, http.StatusFound)
			return true
		case "/denied": // a hop to a host not allowed, named by the token
			http.Redirect(w, r, "http://"+tok+".evil.test/", http.StatusFound)
			return true
		case "/cut": // the value straddles every cut from 0 to its end
			fmt.Fprint(w, strings.Repeat("a", 100)+tok+strings.Repeat("b", 100))
		}
		return false
	})
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	e := egress{plugin: "weather", hosts: []string{"api.test"}, allowPrivate: true, lookup: lookup, secrets: secrets}
	base := "http://api.test:" + portOf(srv.srv)
	asked := []string{"api_key", "odd"}

	check := func(name string, resp fetchResponse, err error) {
		t.Helper()
		// Everything of the answer the plugin reads, decoded.
		seen := resp.URL + "\n" + resp.Body + "\n"
		for k, v := range resp.Headers {
			seen += k + ": " + v + "\n"
		}
		if err != nil {
			seen += err.Error()
		}
		if resp.BodyEncoding == "base64" {
			b, _ := base64.StdEncoding.DecodeString(resp.Body)
			seen += string(b)
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				plain, _ := io.ReadAll(zr)
				seen += string(plain)
			}
		}
		for _, v := range []string{testSecretValue, odd} {
			for _, f := range forms(v) {
				if strings.Contains(seen, f) {
					t.Errorf("%s: the plugin sees a secret (%q): %s", name, f, seen)
				}
			}
		}
		if !strings.Contains(seen, "[secret ") {
			t.Errorf("%s: no sign of the hidden secret in %s", name, seen)
		}
	}
	for _, path := range []string{"/header", "/body", "/json", "/json-plain", "/html", "/gzip", "/binary", "/query", "/path", "/denied"} {
		resp, err := e.fetch(t.Context(), fetchRequest{URL: base + path, Secrets: asked})
		check(path, resp, err)
	}
	// The plugin asking for the answer compressed.
	resp, err := e.fetch(t.Context(), fetchRequest{URL: base + "/gzip", Secrets: asked, Headers: map[string]string{"accept-encoding": "gzip"}})
	check("/gzip asked compressed", resp, err)
	hidden := strings.Repeat("a", 100) + "[secret api_key]" + strings.Repeat("b", 100)
	for n := 100; n <= 100+len(testSecretValue); n++ {
		resp, err := e.fetch(t.Context(), fetchRequest{URL: base + "/cut", Secrets: asked, MaxBodyBytes: int64(n)})
		if err != nil || !resp.Truncated || resp.Body != hidden[:n] {
			t.Errorf("cut at %d: %+v, %v; want %q, truncated", n, resp, err, hidden[:n])
		}
	}
	if !srv.sawSecret() {
		t.Fatal("the bound server never got the secret: the test tests nothing")
	}
	// Without secrets asked for, nothing is rewritten.
	resp, err = e.fetch(t.Context(), fetchRequest{URL: base + "/cut", MaxBodyBytes: 150})
	if err != nil || resp.Body != strings.Repeat("a", 100)+strings.Repeat("b", 50) || !resp.Truncated {
		t.Fatalf("no secrets: %+v, %v", resp, err)
	}
}
