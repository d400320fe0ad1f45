package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
)

// A call whose request the API refuses before the pipeline runs it (a body
// too large, not {"arguments":…}, ending early) is still a call: it is in
// the audit log with its entry point, tool, outcome and — when something
// was read — the hash of what was read, for a tool that exists and for one
// that does not.
func TestRefusedRequestsAreRecorded(t *testing.T) {
	l, err := audit.Open(filepath.Join(t.TempDir(), audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	h := newRealHostWith(t, host.Options{Observers: []host.CallObserver{&audit.Recorder{Log: l}}})
	_, srv := serve(t, h, Options{MaxBodyBytes: 64})
	const tool = "get_current_time"
	big := `{"arguments":{"timezone":"` + strings.Repeat("x", 100) + `"}}`
	sum := func(s string) string {
		b := sha256.Sum256([]byte(s))
		return hex.EncodeToString(b[:])
	}
	cases := []struct {
		name, tool, body string
		chunked          bool
		status           int
		outcome, hash    string
	}{
		{"declared too large", tool, big, false, 413, "payload_too_large", ""},
		{"chunked too large", tool, big, true, 413, "payload_too_large", ""},
		{"not an object", tool, `[1]`, false, 400, "invalid_arguments", sum(`[1]`)},
		{"unknown key", tool, `{"argument":{}}`, false, 400, "invalid_arguments", sum(`{"argument":{}}`)},
		{"invalid JSON", tool, `{"arguments":`, false, 400, "invalid_arguments", sum(`{"arguments":`)},
		{"unknown tool, bad body", "nope", `{"x":1}`, false, 400, "invalid_arguments", sum(`{"x":1}`)},
		{"unknown tool, too large", "nope", big, false, 413, "payload_too_large", ""},
	}
	for _, c := range cases {
		var body io.Reader = strings.NewReader(c.body)
		if c.chunked {
			body = io.MultiReader(body) // no length known: sent chunked
		}
		req, err := http.NewRequest("POST", srv.URL+"/v1/tools/"+c.tool+"/call", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
	f, err := os.Open(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := audit.List(f, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var calls []audit.Record
	for _, r := range recs {
		if r.Kind == audit.KindCall {
			calls = append(calls, r)
		}
	}
	if len(calls) != len(cases) {
		t.Fatalf("%d call records for %d refused requests: %+v", len(calls), len(cases), calls)
	}
	for i, c := range cases {
		r := calls[i]
		if r.Entry != "http" || r.Tool != c.tool || r.Outcome != c.outcome || r.ArgumentsSHA256 != c.hash || r.Message == "" {
			t.Errorf("%s: record %+v, want entry http, tool %s, outcome %s, arguments_sha256 %q and a message", c.name, r, c.tool, c.outcome, c.hash)
		}
		if wantPlugin := c.tool == tool; (r.Plugin != "") != wantPlugin || (r.Digest != "") != wantPlugin {
			t.Errorf("%s: plugin %q digest %q; want them named exactly when the tool is installed", c.name, r.Plugin, r.Digest)
		}
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(f, ""); err != nil {
		t.Fatalf("the log does not verify: %v", err)
	}
}
