package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// interruptingEngine is an engine whose compile is interrupted: it cancels
// the install's context, as Ctrl-C does, and fails as the worker engine
// then does.
type interruptingEngine struct {
	engine.Engine
	cancel context.CancelFunc
}

func (e interruptingEngine) Compile(ctx context.Context, _ engine.Spec) (engine.Module, error) {
	e.cancel()
	<-ctx.Done()
	return nil, toolerr.Errorf(toolerr.CodeCancelled, "the caller went away")
}

// An install interrupted while its module compiles says so, is not
// reported as a refused module, and installs nothing.
func TestInterruptedInstallIsNotARefusedModule(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := host.New(host.Options{Store: st, Engine: interruptingEngine{cancel: cancel}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	alice, err := signing.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddTrustedKey("alice", alice.Public()); err != nil {
		t.Fatal(err)
	}
	b, err := plugin.NewBundle(echoManifest("echo", "1.0.0", "", defaultLimits), echoModule(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddSignature(signing.Sign(alice, b.Digest(), time.Time{})); err != nil {
		t.Fatal(err)
	}
	_, err = h.Install(ctx, b, host.InstallOptions{})
	if !errors.Is(err, host.ErrInterrupted) || !errors.Is(err, context.Canceled) || errors.Is(err, host.ErrInvalidModule) {
		t.Fatalf("interrupted install: %v; want ErrInterrupted wrapping context.Canceled, not ErrInvalidModule", err)
	}
	if !strings.Contains(err.Error(), "nothing was installed") {
		t.Errorf("the error does not say nothing was installed: %v", err)
	}
	if _, err := h.Plugin("echo"); !errors.Is(err, host.ErrNotInstalled) {
		t.Errorf("after an interrupted install: Plugin = %v, want ErrNotInstalled", err)
	}
}

// A same-precedence version with build metadata is refused with the
// version that is installed, not as if it were the one installed.
func TestSamePrecedenceVersionNamesTheInstalledOne(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	e.install(e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits), alice))
	_, err := e.h.Install(context.Background(), e.bundle(echoManifest("echo", "1.0.0+build", "", `{"memory_pages": 18}`), alice), host.InstallOptions{})
	if !errors.Is(err, host.ErrDowngrade) {
		t.Fatalf("1.0.0+build over 1.0.0: %v, want ErrDowngrade", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "installed echo 1.0.0 ") || strings.Contains(msg, "1.0.0+build is already installed") {
		t.Errorf("the message does not name the installed version: %v", err)
	}
}
