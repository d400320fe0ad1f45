package control_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
)

// blockingObserver holds every call's record until released: a call is
// then answered, and its record written, only after release.
type blockingObserver struct{ entered, release chan struct{} }

func (o *blockingObserver) ObserveCall(context.Context, host.CallRecord) {
	o.entered <- struct{}{}
	<-o.release
}

// Serve returns only once the requests it was handling are answered: its
// owner closes the host and the audit log right after, and a call still
// between its end and its record (one whose approval wait shutdown ended,
// say) lost its record and its answer.
func TestServeReturnsAfterTheCallsItHandles(t *testing.T) {
	obs := &blockingObserver{entered: make(chan struct{}, 1), release: make(chan struct{})}
	h := newHostWith(t, host.Options{AllowUnsigned: true, Observers: []host.CallObserver{obs}})
	installWasm(t, h, "echo", "../../host/testdata/echo/echo.wasm", "echo", 2000)
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := control.Listen(filepath.Join(dir, control.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		control.Serve(ctx, ln, control.Local{H: h}, h, slog.New(slog.DiscardHandler))
	}()
	c, err := control.Dial(context.Background(), filepath.Join(dir, control.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	called := make(chan error, 1)
	go func() { _, err := c.Call(context.Background(), "echo", []byte(`{}`)); called <- err }()
	<-obs.entered // the call ran and its record is being written
	stop()
	select {
	case <-served:
		t.Fatal("Serve returned while a call it handles was still being recorded")
	case <-time.After(time.Second):
	}
	close(obs.release)
	if err := <-called; err != nil {
		t.Fatalf("the call was not answered: %v", err)
	}
	<-served
}
