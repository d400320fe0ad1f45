package control_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/internal/testplugins"
)

// A fake server another user runs: it answers every request with 200.
func TestMain(m *testing.M) {
	if path := os.Getenv("CONTROL_TEST_FAKE_SERVER"); path != "" {
		l, err := net.Listen("unix", path)
		if err != nil {
			os.Exit(2)
		}
		_ = os.Chmod(path, 0o600)
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`"pong"`)) }))
		os.Exit(0)
	}
	os.Exit(testplugins.Main(m))
}

// startImpostor runs the fake server as user nobody in a directory anyone
// can write, as an attacker sharing a badly set-up home would.
func startImpostor(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a process as another user needs root")
	}
	dir := filepath.Join(t.TempDir(), "shared-home")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o777)
	for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755) // so nobody can reach dir
	}
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(dir), "impostor")
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, control.SocketName)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "CONTROL_TEST_FAKE_SERVER="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run a process as nobody: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the impostor did not start")
		}
	}
	return path
}

func TestDialRefusesSocketOfAnotherUser(t *testing.T) {
	path := startImpostor(t)
	_, err := control.Dial(context.Background(), path)
	if !errors.Is(err, control.ErrUntrustedSocket) {
		t.Fatalf("Dial to another user's socket: %v, want ErrUntrustedSocket", err)
	}
	t.Logf("refused: %v", err)
}

// The socket file is chowned to this user, as a planted file could be
// arranged: the peer credentials still show the impostor.
func TestDialRefusesPeerOfAnotherUser(t *testing.T) {
	path := startImpostor(t)
	if err := os.Lchown(path, os.Geteuid(), os.Getegid()); err != nil {
		t.Fatal(err)
	}
	_, err := control.Dial(context.Background(), path)
	if !errors.Is(err, control.ErrUntrustedSocket) {
		t.Fatalf("Dial to another user's process: %v, want ErrUntrustedSocket", err)
	}
	t.Logf("refused: %v", err)
}
