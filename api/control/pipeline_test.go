package control_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// recorder is a host.CallObserver that hands every record to a channel.
type recorder struct{ recs chan host.CallRecord }

func (r *recorder) ObserveCall(_ context.Context, rec host.CallRecord) { r.recs <- rec }

func (r *recorder) next(t *testing.T, within time.Duration) host.CallRecord {
	t.Helper()
	select {
	case rec := <-r.recs:
		return rec
	case <-time.After(within):
		t.Fatalf("no call record within %v", within)
		return host.CallRecord{}
	}
}

// socketHost serves a host with rec as its observer (and unsigned plugins
// allowed) on a control socket, and returns it with a client.
func socketHost(t *testing.T, rec *recorder) (*host.Host, *control.Client) {
	t.Helper()
	h := newHostWith(t, host.Options{AllowUnsigned: true, Observers: []host.CallObserver{rec}})
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := control.Listen(filepath.Join(dir, control.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		control.Serve(ctx, ln, control.Local{H: h}, h, slog.New(slog.DiscardHandler))
	}()
	c, err := control.Dial(context.Background(), filepath.Join(dir, control.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
		os.RemoveAll(dir)
	})
	return h, c
}

func installWasm(t *testing.T, h *host.Host, name, wasmPath, export string, timeoutMS int) {
	t.Helper()
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := plugin.NewBundle([]byte(`{"name":"`+name+`","version":"1.0.0","description":"d","wasm":"p.wasm",
		"tools":[{"name":"`+name+`","description":"d","export":"`+export+`","parameters":{"type":"object"}}],
		"limits":{"memory_pages":17,"timeout_ms":`+strconv.Itoa(timeoutMS)+`}}`), wasm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Install(context.Background(), b, host.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A call over the control socket (what `toolhost call` does while serve
// runs) goes through the serving host's pipeline: its observers see it,
// labelled cli, or with the entry point the client's ctx names.
func TestSocketCallsReachThePipeline(t *testing.T) {
	rec := &recorder{recs: make(chan host.CallRecord, 8)}
	h, c := socketHost(t, rec)
	installWasm(t, h, "echo", "../../host/testdata/echo/echo.wasm", "echo", 2000)
	if _, err := c.Call(context.Background(), "echo", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := rec.next(t, 5*time.Second); got.Entry != host.EntryCLI || got.Tool != "echo" || got.Plugin != "echo" || got.Outcome != "" {
		t.Fatalf("record %+v, want a successful cli call of echo", got)
	}
	b := control.NewBackend(context.Background(), c, slog.New(slog.DiscardHandler))
	if _, err := b.Call(context.Background(), "echo", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := rec.next(t, 5*time.Second); got.Entry != host.EntryMCPStdio {
		t.Fatalf("attached MCP call recorded as %q, want mcp-stdio", got.Entry)
	}
}

// Ctrl-C on `toolhost call`: the client's ctx ends, the connection
// closes, and the serving side cancels the call; the record says
// cancelled.
func TestSocketClientGoneCancelsTheCall(t *testing.T) {
	rec := &recorder{recs: make(chan host.CallRecord, 8)}
	h, c := socketHost(t, rec)
	installWasm(t, h, "loop", "../../host/testdata/hostile/infinite_loop.wasm", "run", 20000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "loop", nil)
		done <- err
	}()
	for h.Load().Running != 1 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the loop is running in the sandbox
	start := time.Now()
	cancel()
	if err := <-done; toolerr.CodeOf(err) != toolerr.CodeCancelled {
		t.Fatalf("client: %v, want cancelled", err)
	}
	// The sandbox stops the call (well before its 20 s deadline).
	got := rec.next(t, 10*time.Second)
	t.Logf("the serving side recorded the call %v after the client left", time.Since(start))
	if got.Outcome != toolerr.CodeCancelled || got.Entry != host.EntryCLI {
		t.Fatalf("record %+v, want a cancelled cli call", got)
	}
}
