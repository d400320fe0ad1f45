package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
)

// TestSecretReachesOnlyItsHost is the real stack (badger, worker
// processes, a loopback server): the secret the operator sets is sent to
// the host it is bound to, its new value takes effect without a restart,
// a request elsewhere that asks for it is denied, and neither the plugin's
// output (every byte it can read) nor the host's log ever holds it.
func TestSecretReachesOnlyItsHost(t *testing.T) {
	const v1, v2 = "first-SECRET-value-0a7d", "second-SECRET-value-51ce"
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte("hello-from-server"))
	}))
	defer srv.Close()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(auths)
	}
	lastAuth := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(auths) == 0 {
			return "<none>"
		}
		return auths[len(auths)-1]
	}
	var logs testplugins.SyncBuffer
	r := newRig(t, rigOptions{allowPrivate: true, host: host.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}})
	wasm, err := os.ReadFile(filepath.Join("engine", "sandbox", "testdata", "secretdump.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := []byte(`{"name":"dump","version":"1.0.0","description":"dumps what it can see","wasm":"plugin.wasm",
 "tools":[{"name":"fetch_dump","description":"fetch, then dump memory","parameters":{"type":"object"}},
          {"name":"config_units","description":"the units config value","parameters":{"type":"object"}}],
 "limits":{"memory_pages":64,"timeout_ms":15000,"max_output_bytes":8388608},
 "permissions":{"allowed_hosts":["localhost","api.example.com"]},
 "config":{"type":"object","properties":{"units":{"enum":["metric","imperial"]}},"additionalProperties":false},
 "secrets":{"api_token":{"hosts":["localhost"],"header":"Authorization","prefix":"Bearer "}}}`)
	b, err := plugin.NewBundle(manifest, wasm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddSignature(signing.Sign(r.key, b.Digest(), time.Time{})); err != nil {
		t.Fatal(err)
	}
	if _, err := r.host.Install(context.Background(), b, host.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	fetch := func(url string) string {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"url": url, "secrets": []string{"api_token"}})
		out, err := r.host.Call(context.Background(), "fetch_dump", args)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		for _, v := range []string{v1, v2} {
			if strings.Contains(string(out), v) {
				t.Fatalf("the plugin's output holds the secret")
			}
		}
		return string(out)
	}
	bound := "http://localhost:" + srv.URL[strings.LastIndexByte(srv.URL, ':')+1:] + "/"

	// Not set yet: the plugin is told how to set it; nothing is sent.
	if out := fetch(bound); !strings.Contains(out, "toolhost secret set") {
		t.Fatal("a request for an unset secret did not say how to set it")
	}
	if err := r.host.SetSecret("dump", "nope", v1); !errors.Is(err, host.ErrInvalidSetting) {
		t.Fatalf("SetSecret of an undeclared secret: %v, want ErrInvalidSetting", err)
	}
	if err := r.host.SetSecret("dump", "api_token", v1); err != nil {
		t.Fatal(err)
	}
	if out := fetch(bound); !strings.Contains(out, "hello-from-server") {
		t.Fatal("the dump does not show the response: it does not show the plugin's memory")
	}
	if got := lastAuth(); got != "Bearer "+v1 {
		t.Fatalf("the bound server saw Authorization %q, want the secret", got)
	}
	// A new value takes effect on the next call (the module key changed).
	if err := r.host.SetSecret("dump", "api_token", v2); err != nil {
		t.Fatal(err)
	}
	fetch(bound)
	if got := lastAuth(); got != "Bearer "+v2 {
		t.Fatalf("after a new value the server saw %q, want the new one", got)
	}
	// Elsewhere: permission denied, nothing sent.
	before := count()
	if out := fetch("http://api.example.com/"); !strings.Contains(out, `may only be sent to [localhost], not to`) {
		t.Fatal("asking for the secret on another host was not denied")
	}
	if count() != before {
		t.Fatal("a denied request reached a server")
	}
	st, err := r.host.Secrets("dump")
	if err != nil || len(st) != 1 || !st[0].Set || st[0].Name != "api_token" {
		t.Fatalf("Secrets = %+v, %v", st, err)
	}

	// Config: checked against the schema.
	if _, err := r.host.SetConfig("dump", map[string]string{"units": "kelvin"}, nil); !errors.Is(err, host.ErrInvalidSetting) {
		t.Fatalf("SetConfig with a value outside the schema: %v", err)
	}
	if _, err := r.host.SetConfig("dump", map[string]string{"colour": "red"}, nil); !errors.Is(err, host.ErrInvalidSetting) {
		t.Fatalf("SetConfig with an undeclared key: %v", err)
	}
	if cfg, err := r.host.SetConfig("dump", map[string]string{"units": "metric"}, nil); err != nil || cfg["units"] != "metric" {
		t.Fatalf("SetConfig = %v, %v", cfg, err)
	}
	fetch(bound) // still works with config set (another module key)
	if out, err := r.host.Call(context.Background(), "config_units", []byte(`{}`)); err != nil || string(out) != `"metric"` {
		t.Fatalf("the plugin reads config units = %s, %v; want \"metric\"", out, err)
	}
	if _, err := r.host.SetConfig("dump", nil, []string{"units"}); err != nil {
		t.Fatal(err)
	}
	if out, err := r.host.Call(context.Background(), "config_units", []byte(`{}`)); err != nil || string(out) != `""` {
		t.Fatalf("after unset the plugin reads %s, %v; want nothing", out, err)
	}

	if err := r.host.RemoveSecret("dump", "api_token"); err != nil {
		t.Fatal(err)
	}
	if out := fetch(bound); !strings.Contains(out, "has no value") || !strings.Contains(out, "toolhost secret set dump api_token") {
		t.Fatalf("after removing the secret the request did not say it has no value and how to set it: %s", out)
	}
	if err := r.host.Remove("dump"); err != nil {
		t.Fatal(err)
	}
	if names, err := r.store.SecretNames("dump"); err != nil || len(names) != 0 {
		t.Fatalf("secrets left after remove: %v, %v", names, err)
	}
	if cfg, err := r.store.Config("dump"); err != nil || len(cfg) != 0 {
		t.Fatalf("config left after remove: %v, %v", cfg, err)
	}
	for _, v := range []string{v1, v2} {
		if strings.Contains(logs.String(), v) {
			t.Fatal("the host's log holds the secret")
		}
	}
}
