package control_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/store"
)

// operatorAPI is everything the CLI asks of a host that takes a name.
type operatorAPI interface {
	control.API
	control.Governance
	control.Settings
}

// governedHost opens a governed host (unsigned plugins allowed) with the
// echo plugin installed.
func governedHost(t *testing.T) *control.Governed {
	t.Helper()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := sandbox.NewInProcess(testplugins.CacheDir(t))
	if err != nil {
		t.Fatal(err)
	}
	gov, err := govern.New(govern.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Store: st, Engine: engine, AllowUnsigned: true, Governor: gov})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		engine.Close(context.Background())
		st.Close()
	})
	if _, err := h.Install(context.Background(), echoBundle(t, "1.0.0"), host.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	return &control.Governed{API: control.Local{H: h}, H: h, Gov: gov, Actor: "cli"}
}

// TestNamesConformance: names that cannot travel as they are in a URL
// path (empty, ".", "..", with a slash) get the same answer, message and
// kind, in process and over the socket. Over the socket they used to
// shift the route ("" in /v1/plugins//secrets reached plugin "secrets")
// or reach no route at all, reported as "malformed answer (HTTP 404):
// invalid character 'p' after top-level value".
func TestNamesConformance(t *testing.T) {
	type answer struct {
		msg  string
		kind error // errors.Is target; nil: a call error, compared by code
		code toolerr.Code
	}
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(api operatorAPI, name string) error
		want func(name string) answer
	}{
		{"Remove", func(api operatorAPI, n string) error { return api.Remove(ctx, n) },
			func(n string) answer {
				return answer{msg: host.NotInstalledError(n).Error(), kind: host.ErrNotInstalled}
			}},
		{"Plugin", func(api operatorAPI, n string) error { _, err := api.Plugin(ctx, n); return err },
			func(n string) answer {
				return answer{msg: host.NotInstalledError(n).Error(), kind: host.ErrNotInstalled}
			}},
		{"Call", func(api operatorAPI, n string) error { _, err := api.Call(ctx, n, []byte(`{}`)); return err },
			func(n string) answer {
				return answer{msg: host.NoSuchToolError(n).Error(), code: toolerr.CodeToolNotFound}
			}},
		{"Config", func(api operatorAPI, n string) error { _, err := api.Config(ctx, n); return err },
			func(n string) answer {
				return answer{msg: host.NotInstalledError(n).Error(), kind: host.ErrNotInstalled}
			}},
		{"SetConfig", func(api operatorAPI, n string) error {
			_, err := api.SetConfig(ctx, n, map[string]string{"k": "v"}, nil)
			return err
		}, func(n string) answer {
			return answer{msg: host.NotInstalledError(n).Error(), kind: host.ErrNotInstalled}
		}},
		{"Secrets", func(api operatorAPI, n string) error { _, err := api.Secrets(ctx, n); return err },
			func(n string) answer {
				return answer{msg: host.NotInstalledError(n).Error(), kind: host.ErrNotInstalled}
			}},
		{"SetSecret plugin", func(api operatorAPI, n string) error { return api.SetSecret(ctx, n, "token", "v") },
			func(n string) answer {
				return answer{msg: host.NotInstalledError(n).Error(), kind: host.ErrNotInstalled}
			}},
		{"SetSecret name", func(api operatorAPI, n string) error { return api.SetSecret(ctx, "echo", n, "v") },
			func(n string) answer {
				return answer{msg: host.UndeclaredSecretError("echo", n, []string{}).Error(), kind: host.ErrInvalidSetting}
			}},
		{"RemoveSecret plugin", func(api operatorAPI, n string) error { return api.RemoveSecret(ctx, n, "token") },
			func(n string) answer {
				return answer{msg: host.NotInstalledError(n).Error(), kind: host.ErrNotInstalled}
			}},
		{"RemoveSecret name", func(api operatorAPI, n string) error { return api.RemoveSecret(ctx, "echo", n) },
			func(n string) answer {
				return answer{msg: store.SecretNotSetError("echo", n).Error(), kind: store.ErrNotFound}
			}},
		{"SetPolicy", func(api operatorAPI, n string) error { return api.SetPolicy(ctx, n, "deny") },
			func(n string) answer { return answer{msg: store.ValidPolicyPattern(n).Error()} }},
		{"UnsetPolicy", func(api operatorAPI, n string) error { return api.UnsetPolicy(ctx, n) },
			func(n string) answer { return answer{msg: store.NoPolicyRuleError(n).Error(), kind: store.ErrNotFound} }},
		{"Decide", func(api operatorAPI, n string) error { return api.Decide(ctx, n, true, "") },
			func(n string) answer {
				return answer{msg: govern.NoSuchApprovalError(n).Error(), kind: govern.ErrNoSuchApproval}
			}},
	}
	for _, impl := range []struct {
		name string
		api  func(t *testing.T, g *control.Governed) operatorAPI
	}{
		{"local", func(t *testing.T, g *control.Governed) operatorAPI { return g }},
		{"socket", func(t *testing.T, g *control.Governed) operatorAPI {
			sock, ln := listenTemp(t)
			sctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				control.Serve(sctx, ln, g, g.H, slog.New(slog.DiscardHandler))
			}()
			t.Cleanup(func() { cancel(); <-done })
			c, err := control.Dial(context.Background(), sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c
		}},
	} {
		t.Run(impl.name, func(t *testing.T) {
			api := impl.api(t, governedHost(t))
			for _, c := range cases {
				for _, n := range []string{"", ".", "..", "a/b", "../x", "secrets", "nope"} {
					if c.name == "SetPolicy" && n == "secrets" || c.name == "SetPolicy" && n == "nope" {
						continue // valid patterns: they are set
					}
					err := c.run(api, n)
					want := c.want(n)
					if err == nil {
						t.Errorf("%s(%q): no error, want %q", c.name, n, want.msg)
						continue
					}
					if err.Error() != want.msg {
						t.Errorf("%s(%q): %q, want %q", c.name, n, err, want.msg)
					}
					if want.kind != nil && !errors.Is(err, want.kind) {
						t.Errorf("%s(%q): %v is not %v", c.name, n, err, want.kind)
					}
					if want.code != "" && toolerr.CodeOf(err) != want.code {
						t.Errorf("%s(%q): code %q, want %q", c.name, n, toolerr.CodeOf(err), want.code)
					}
				}
			}
		})
	}
}

// TestAnswerThatIsNotTheAPIs: a reply that is not the API's JSON (the
// router's 404 page of a toolhost that lacks the route) is reported as
// what it is, not as a JSON parse error.
func TestAnswerThatIsNotTheAPIs(t *testing.T) {
	sock, ln := listenTemp(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/ping", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"result":"pong"}`) })
	mux.HandleFunc("GET /v1/tools", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"result":[]}`) })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := control.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for _, tc := range []struct {
		run  func() error
		want string
	}{
		{func() error { _, err := c.Plugins(context.Background()); return err },
			`control: the running toolhost answered HTTP 404 (no such route) to GET /v1/plugins: "404 page not found", not an API answer; it may be another toolhost version than this command: restart toolhost serve with this one`},
		{func() error { return c.Remove(context.Background(), "echo") },
			`control: the running toolhost answered HTTP 404 (no such route) to DELETE /v1/plugins/echo: "404 page not found"`},
		{func() error { _, err := c.Call(context.Background(), "x", []byte(`{}`)); return err },
			`control: the running toolhost answered HTTP 404 (no such route) to POST /v1/tools/x/call`},
	} {
		err := tc.run()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("got %v, want it to start with %q", err, tc.want)
		}
	}
}

// listenTemp listens on a control socket in a fresh short-lived directory
// (a unix socket path must stay short, so not t.TempDir's), removed at the
// end of the test.
func listenTemp(t *testing.T) (string, net.Listener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, control.SocketName)
	ln, err := control.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	return sock, ln
}
