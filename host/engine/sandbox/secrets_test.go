package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

const testSecretValue = "tok-5ecret-VALUE-93b1"

// headerLog is a loopback server that records the secret headers of every
// request it gets.
type headerLog struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newHeaderLog(t *testing.T, handler func(w http.ResponseWriter, r *http.Request) bool) *headerLog {
	h := &headerLog{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.Header.Clone())
		h.mu.Unlock()
		if handler == nil || !handler(w, r) {
			fmt.Fprint(w, "hello-from-server")
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *headerLog) requests() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.seen...)
}

// sawSecret reports whether any request carried the secret, in any header.
func (h *headerLog) sawSecret() bool {
	for _, hd := range h.requests() {
		for _, vs := range hd {
			for _, v := range vs {
				if strings.Contains(v, testSecretValue) {
					return true
				}
			}
		}
	}
	return false
}

func testSecrets() []engine.Secret {
	return []engine.Secret{
		{Name: "api_token", Hosts: []string{"api.test"}, Header: "Authorization", Prefix: "Bearer ", Value: testSecretValue},
		{Name: "api_key", Hosts: []string{"api.test"}, Header: "X-Api-Key", Value: testSecretValue},
		{Name: "unset", Hosts: []string{"api.test"}, Header: "X-Unset"},
	}
}

// TestFetchSecretsOnlyToBoundHosts: two real loopback servers under two
// names (the lookup maps both to 127.0.0.1; the sockets are real). A
// secret reaches the host it is bound to, never the other one, directly
// or through a redirect, and no error message holds its value.
func TestFetchSecretsOnlyToBoundHosts(t *testing.T) {
	var bound *headerLog
	other := newHeaderLog(t, func(w http.ResponseWriter, r *http.Request) bool {
		if to := r.URL.Query().Get("back"); to != "" {
			http.Redirect(w, r, strings.ReplaceAll(to, "PORTA", portOf(bound.srv)), http.StatusFound)
			return true
		}
		return false
	})
	bound = newHeaderLog(t, func(w http.ResponseWriter, r *http.Request) bool {
		if to := r.URL.Query().Get("to"); to != "" {
			to = strings.ReplaceAll(to, "PORTB", portOf(other.srv))
			http.Redirect(w, r, strings.ReplaceAll(to, "PORTA", portOf(bound.srv)), http.StatusFound)
			return true
		}
		return false
	})
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "api.test" || host == "other.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	e := egress{plugin: "weather", hosts: []string{"api.test", "other.test"}, allowPrivate: true, lookup: lookup, secrets: testSecrets()}
	a := "http://api.test:" + portOf(bound.srv)
	b := "http://other.test:" + portOf(other.srv)
	both := []string{"api_token", "api_key"}

	// To the bound host: both headers, as declared.
	if _, err := e.fetch(t.Context(), fetchRequest{URL: a + "/", Secrets: both}); err != nil {
		t.Fatal(err)
	}
	got := bound.requests()
	if len(got) != 1 || got[0].Get("Authorization") != "Bearer "+testSecretValue || got[0].Get("X-Api-Key") != testSecretValue {
		t.Fatalf("bound host saw %v, want both secret headers", got)
	}
	// Not asked for: not sent.
	if _, err := e.fetch(t.Context(), fetchRequest{URL: a + "/"}); err != nil {
		t.Fatal(err)
	}
	if got := bound.requests(); got[1].Get("Authorization") != "" || got[1].Get("X-Api-Key") != "" {
		t.Fatalf("a request that did not ask for the secret carried it: %v", got[1])
	}

	var errs []error
	// To the other host, asking for it: denied before any connection.
	_, err := e.fetch(t.Context(), fetchRequest{URL: b + "/", Secrets: []string{"api_token"}})
	if !errors.Is(err, errDenied) || !strings.Contains(err.Error(), `secret "api_token" may only be sent to [api.test], not to "other.test"`) {
		t.Fatalf("asking for the secret on another host: %v, want a permission denial", err)
	}
	errs = append(errs, err)
	if n := len(other.requests()); n != 0 {
		t.Fatalf("the other host got %d requests, want none", n)
	}
	// Redirected from the bound host to the other one: the hop carries
	// neither header (Go would keep X-Api-Key on its own).
	resp, err := e.fetch(t.Context(), fetchRequest{URL: a + "/r?to=http://other.test:PORTB/x", Secrets: both})
	if err != nil || resp.Body != "hello-from-server" {
		t.Fatalf("redirect: %+v, %v", resp, err)
	}
	// And back again: the bound host gets them again on the last hop.
	_, err = e.fetch(t.Context(), fetchRequest{URL: a + "/r?to=" + "http://other.test:PORTB/y%3Fback=http://api.test:PORTA/z", Secrets: both})
	if err != nil {
		t.Fatal(err)
	}
	if other.sawSecret() {
		t.Fatalf("the other host saw the secret: %v", other.requests())
	}
	if n := len(other.requests()); n != 2 {
		t.Fatalf("the other host got %d requests, want 2 (the redirect hops)", n)
	}
	last := bound.requests()[len(bound.requests())-1]
	if last.Get("Authorization") != "Bearer "+testSecretValue || last.Get("X-Api-Key") != testSecretValue {
		t.Fatalf("the hop back to the bound host lost its headers: %v", last)
	}

	_, err = e.fetch(t.Context(), fetchRequest{URL: a + "/", Secrets: []string{"nope"}})
	if !errors.Is(err, errDenied) || !strings.Contains(err.Error(), `secret "nope" is not declared`) {
		t.Fatalf("undeclared secret: %v, want a permission denial", err)
	}
	errs = append(errs, err)
	_, err = e.fetch(t.Context(), fetchRequest{URL: a + "/", Secrets: []string{"unset"}})
	if err == nil || errors.Is(err, errDenied) || !strings.Contains(err.Error(), "toolhost secret set weather unset") {
		t.Fatalf("unset secret: %v, want an error saying how to set it", err)
	}
	errs = append(errs, err)
	for _, err := range errs {
		if strings.Contains(err.Error(), testSecretValue) {
			t.Fatalf("error message holds the secret: %v", err)
		}
	}
}

// Without the operator's private-network grant (the setting for a local
// test server), a secret goes only over https: a plugin asking for one on
// an http URL is refused before any connection, and a redirect hop to
// http carries none.
func TestSecretsOnlyOverHTTPS(t *testing.T) {
	e := egress{plugin: "weather", hosts: []string{"api.test"}, secrets: testSecrets()}
	_, err := e.fetch(t.Context(), fetchRequest{URL: "http://api.test/", Secrets: []string{"api_token"}})
	if !errors.Is(err, errDenied) || !strings.Contains(err.Error(), "only over https") || strings.Contains(err.Error(), testSecretValue) {
		t.Fatalf("a secret on an http URL: %v, want a permission denial", err)
	}
	secrets, err := e.requestedSecrets([]string{"api_token"}, &url.URL{Scheme: "https", Host: "api.test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		want         bool
	}{
		{"https://api.test/x", false, true},
		{"http://api.test/x", false, false}, // a redirect hop to http
		{"http://api.test/x", true, true},
	} {
		u, _ := url.Parse(tc.url)
		h := http.Header{}
		egress{secrets: testSecrets(), allowPrivate: tc.allowPrivate}.applySecrets(h, secrets, u)
		if got := h.Get("Authorization") != ""; got != tc.want {
			t.Errorf("%s (private grant %v): secret sent %v, want %v", tc.url, tc.allowPrivate, got, tc.want)
		}
	}
}

// TestSecretNeverEntersSandbox: a module that sends its input to
// http_fetch and answers with every byte it can read (the Extism kernel's
// memory and its own) never finds the secret, although the server got it.
func TestSecretNeverEntersSandbox(t *testing.T) {
	srv := newHeaderLog(t, nil)
	wasm, err := os.ReadFile(filepath.Join("testdata", "secretdump.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	spec := engine.Spec{
		Key: "secretdump", Name: "secretdump", Wasm: wasm, Exports: []string{"fetch_dump"},
		Permissions:         plugin.Permissions{AllowedHosts: []string{"localhost", "api.example.com"}},
		Limits:              plugin.Limits{MemoryPages: 64, TimeoutMS: 10_000, MaxOutputBytes: 8 << 20},
		AllowPrivateNetwork: true,
		Secrets: []engine.Secret{{Name: "api_token", Hosts: []string{"localhost"}, Header: "Authorization",
			Prefix: "Bearer ", Value: testSecretValue}},
	}
	mod, err := capEngine(t).Compile(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })

	url := "http://localhost:" + portOf(srv.srv) + "/"
	out, terr := call(t, mod, "fetch_dump", map[string]any{"url": url, "secrets": []string{"api_token"}})
	if terr != nil {
		t.Fatal(terr)
	}
	if !srv.sawSecret() {
		t.Fatalf("the bound server did not get the secret: %v", srv.requests())
	}
	if !strings.Contains(string(out), "hello-from-server") {
		t.Fatalf("the dump (%d bytes) lacks the response body: it does not show the plugin's memory", len(out))
	}
	if strings.Contains(string(out), testSecretValue) {
		t.Fatal("the secret is readable inside the sandbox")
	}

	// Asking for it on a host it is not bound to: permission denied, no
	// value anywhere the plugin can read.
	out, terr = call(t, mod, "fetch_dump", map[string]any{"url": "http://api.example.com/", "secrets": []string{"api_token"}})
	if terr != nil {
		if terr.Code != toolerr.CodePermissionDenied || strings.Contains(terr.Message, testSecretValue) {
			t.Fatalf("denied request: %v", terr)
		}
	} else if !strings.Contains(string(out), "permission denied: secret") || strings.Contains(string(out), testSecretValue) {
		t.Fatal("the plugin's view of the denied request does not say permission denied, or holds the secret")
	}
}

// TestFetchSampleSendsSecret: the fetch sample (a Go guest on the official
// PDK) asks for its api_token; the loopback server it is bound to gets it,
// and the tool's result does not hold it.
func TestFetchSampleSendsSecret(t *testing.T) {
	srv := newHeaderLog(t, nil)
	spec := specOf(t, fetchManifest(t, "localhost"), loadSample(t, "fetch").wasm)
	spec.AllowPrivateNetwork = true
	m, err := plugin.ParseManifest(fetchManifest(t, "localhost"))
	if err != nil {
		t.Fatal(err)
	}
	b := m.Secrets["api_token"]
	spec.Secrets = []engine.Secret{{Name: "api_token", Hosts: b.Hosts, Header: b.Header, Prefix: b.Prefix, Value: testSecretValue}}
	spec.Key = "fetch+secret"
	mod, err := capEngine(t).Compile(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	out, terr := call(t, mod, "fetch_url", map[string]any{"url": localURL(srv.srv, "localhost", "/"), "secrets": []string{"api_token"}})
	if terr != nil {
		t.Fatal(terr)
	}
	if got := srv.requests(); len(got) != 1 || got[0].Get("Authorization") != "Bearer "+testSecretValue {
		t.Fatalf("server saw %v, want the bearer token", got)
	}
	if !strings.Contains(string(out), "hello-from-server") || strings.Contains(string(out), testSecretValue) {
		t.Fatalf("result %s: want the body and not the secret", out)
	}
	// Without asking, nothing is sent.
	if _, terr := call(t, mod, "fetch_url", map[string]any{"url": localURL(srv.srv, "localhost", "/")}); terr != nil {
		t.Fatal(terr)
	}
	if got := srv.requests(); len(got) != 2 || got[1].Get("Authorization") != "" {
		t.Fatalf("a request that did not ask carried the secret: %v", got)
	}
}
