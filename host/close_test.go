package host_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
)

// TestClosedHostRefusesCallsAndChanges: after Close a call is told the
// host is closed (not that its tool is not installed), and no change loads
// the plugins again into the closed host; closing twice is harmless.
func TestClosedHostRefusesCallsAndChanges(t *testing.T) {
	e := newEnv(t, host.Options{})
	alice := e.curator("alice", true)
	b := e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits), alice)
	e.install(b)
	if _, err := e.call("echo", `{}`); err != nil {
		t.Fatal(err)
	}
	e.h.Close()
	e.h.Close()

	for _, tool := range []string{"echo", "no_such_tool"} {
		_, err := e.call(tool, `{}`)
		wantCode(t, err, toolerr.CodeUnavailable, "closed")
	}
	other, err := signing.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	changes := map[string]func() error{
		"Install":          func() error { _, err := e.h.Install(ctx, b, host.InstallOptions{}); return err },
		"Remove":           func() error { return e.h.Remove("echo") },
		"Reload":           e.h.Reload,
		"AddTrustedKey":    func() error { return e.h.AddTrustedKey("bob", other.Public()) },
		"RemoveTrustedKey": func() error { return e.h.RemoveTrustedKey(alice.Public().ID()) },
		"Revoke":           func() error { return e.h.Revoke(alice.Public().ID()) },
		"Unrevoke":         func() error { return e.h.Unrevoke(alice.Public().ID()) },
		"SetThreshold":     func() error { return e.h.SetThreshold(1) },
		"SetConfig":        func() error { _, err := e.h.SetConfig("echo", nil, nil); return err },
		"SetSecret":        func() error { return e.h.SetSecret("echo", "k", "v") },
		"RemoveSecret":     func() error { return e.h.RemoveSecret("echo", "k") },
	}
	for name, change := range changes {
		if err := change(); !errors.Is(err, host.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if tools := e.h.Tools(); len(tools) != 0 {
		t.Errorf("Tools after Close and the changes = %v, want none", tools)
	}
	// Nothing was changed in the store: the plugin is still installed.
	if _, err := e.st.Plugin("echo"); err != nil {
		t.Errorf("the store lost the plugin: %v", err)
	}
}

// TestInstallWithoutABundle: a nil bundle is an error, not a nil pointer
// dereference inside the host.
func TestInstallWithoutABundle(t *testing.T) {
	e := newEnv(t, host.Options{})
	if _, err := e.h.Install(context.Background(), nil, host.InstallOptions{}); !errors.Is(err, plugin.ErrInvalidBundle) {
		t.Fatalf("Install(nil) = %v, want ErrInvalidBundle", err)
	}
}
