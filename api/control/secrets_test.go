package control_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// TestSettingsOverSocket: config and secrets through a real control
// socket to a Governed host: errors keep their kind, every change is an
// audit record naming the key, and neither the audit log nor a listing
// holds a secret's value.
func TestSettingsOverSocket(t *testing.T) {
	const value = "sock-SECRET-value-77aa"
	ctx := context.Background()
	h := newHostWith(t, host.Options{AllowUnsigned: true})
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	logPath := filepath.Join(dir, "audit.jsonl")
	alog, err := audit.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	gov := &control.Governed{API: control.Local{H: h}, H: h, Audit: &audit.Recorder{Log: alog}, Actor: "control"}
	sock := filepath.Join(dir, control.SocketName)
	ln, err := control.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		control.Serve(sctx, ln, gov, h, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); <-done })
	c, err := control.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	wasm, err := os.ReadFile("../../host/testdata/echo/echo.wasm")
	if err != nil {
		t.Fatal(err)
	}
	b, err := plugin.NewBundle([]byte(`{"name": "echo", "version": "1.0.0", "description": "d", "wasm": "echo.wasm",
 "tools": [{"name": "echo", "description": "Echo", "parameters": {"type": "object"}}],
 "limits": {"memory_pages": 17},
 "permissions": {"allowed_hosts": ["api.example.com"]},
 "config": {"type": "object", "properties": {"units": {"enum": ["metric", "imperial"]}}, "additionalProperties": false},
 "secrets": {"api_token": {"hosts": ["api.example.com"], "header": "Authorization", "prefix": "Bearer "}}}`), wasm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Install(ctx, b, host.InstallOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := c.SetConfig(ctx, "echo", map[string]string{"units": "kelvin"}, nil); !errors.Is(err, host.ErrInvalidSetting) {
		t.Fatalf("bad config over the socket: %v, want ErrInvalidSetting", err)
	}
	if cfg, err := c.SetConfig(ctx, "echo", map[string]string{"units": "metric"}, nil); err != nil || cfg["units"] != "metric" {
		t.Fatalf("SetConfig = %v, %v", cfg, err)
	}
	if cfg, err := c.Config(ctx, "echo"); err != nil || cfg["units"] != "metric" {
		t.Fatalf("Config = %v, %v", cfg, err)
	}
	if err := c.SetSecret(ctx, "nope", "api_token", value); !errors.Is(err, host.ErrNotInstalled) {
		t.Fatalf("secret of a missing plugin: %v, want ErrNotInstalled", err)
	}
	if err := c.SetSecret(ctx, "echo", "other", value); !errors.Is(err, host.ErrInvalidSetting) {
		t.Fatalf("undeclared secret: %v, want ErrInvalidSetting", err)
	}
	if err := c.SetSecret(ctx, "echo", "api_token", value); err != nil {
		t.Fatal(err)
	}
	list, err := c.Secrets(ctx, "echo")
	if err != nil || len(list) != 1 || !list[0].Set || list[0].Header != "Authorization" {
		t.Fatalf("Secrets = %+v, %v", list, err)
	}
	// The plugin still answers (its module was rebuilt with the settings).
	if out, err := c.Call(ctx, "echo", []byte(`{"x":1}`)); err != nil || string(out) != `{"x":1}` {
		t.Fatalf("call after settings: %s, %v", out, err)
	}
	if err := c.RemoveSecret(ctx, "echo", "api_token"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveSecret(ctx, "echo", "api_token"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removing twice: %v, want ErrNotFound", err)
	}

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"action":"config_set","subject":"echo"`, `"action":"secret_set","subject":"echo"`, `"action":"secret_remove","subject":"echo"`, "secret api_token"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("audit log lacks %s:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), value) {
		t.Fatal("the audit log holds the secret")
	}
}
