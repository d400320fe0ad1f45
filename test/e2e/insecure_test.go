package e2e

import (
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// serve --insecure-no-token answers without the bearer token (for test
// clients that cannot send headers), only on loopback, and says so loudly;
// Host and Origin are still checked.
func TestServeInsecureNoToken(t *testing.T) {
	w := newWorld(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:7411"} {
		for _, extra := range [][]string{nil, {"--allow-non-loopback"}} {
			out, err := w.cmd(append([]string{"serve", "--insecure-no-token", "--addr", addr}, extra...)...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not a loopback address") {
				t.Errorf("serve --insecure-no-token --addr %s %v: %v\n%s; want exit 2 refusing a non-loopback address", addr, extra, err, out)
			}
		}
	}

	s := w.serve("--insecure-no-token")
	get := func(host string) (int, string) {
		req, _ := http.NewRequest("GET", s.url+"/v1/tools", nil) // no Authorization
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(""); code != 200 || !strings.Contains(body, `"tools"`) {
		t.Fatalf("GET /v1/tools without a token = %d %s; want 200", code, body)
	}
	if code, _ := get("evil.example:80"); code == 200 {
		t.Fatalf("a foreign Host was served without a token")
	}
	if logs := s.logs.String(); !strings.Contains(logs, "WARNING: --insecure-no-token") {
		t.Fatalf("no warning on stderr:\n%s", logs)
	}

	// Without the flag the token is required, as always.
	plain := newWorld(t).serve()
	req, _ := http.NewRequest("GET", plain.url+"/v1/tools", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/tools without a token on a normal serve = %d; want 401", resp.StatusCode)
	}
}
