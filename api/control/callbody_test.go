package control_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/api/control"
)

// A call's arguments over the socket's 8 MiB cap were cut at the cap and
// the cut read as the arguments: a body whose first 8 MiB are a document
// on their own (arguments, then blanks) ran with them, whatever followed.
// A body over the cap is refused as a whole, saying so.
func TestCallBodyOverTheCapIsRefused(t *testing.T) {
	srv := httptest.NewServer(control.Handler(governedHost(t), nil))
	defer srv.Close()
	call := func(body string) (int, string) {
		resp, err := http.Post(srv.URL+"/v1/tools/echo/call", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const capBytes = 8 << 20
	for name, body := range map[string]string{
		"a document, blanks to the cap, then more": `{"n":7}` + strings.Repeat(" ", capBytes) + `garbage`,
		"zero bytes past the cap":                  strings.Repeat("\x00", capBytes+1),
		"a document that ends one byte past":       `{"n":7}` + strings.Repeat(" ", capBytes-7) + ` `,
	} {
		code, answer := call(body)
		if code == http.StatusOK || !strings.Contains(answer, "arguments are over 8388608 bytes") {
			t.Errorf("%s: %d %.200s; want a refusal naming the cap", name, code, answer)
		}
	}
	if code, answer := call(`{"n":7}` + strings.Repeat(" ", capBytes-8)); code != http.StatusOK {
		t.Errorf("a body at the cap: %d %.200s, want it run", code, answer)
	}
}
