package worker

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/engine/enginetest"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// stuckWorker stands in for a worker whose teardown, once killed, does not
// end: it leaves a process of its own (outside its process group, so the
// kill does not reach it) holding its stdout and stderr, as the kernel
// holds a dying process's pipes until it has torn the process down. It
// loads anything, and never answers a call: it touches dir/called and
// waits to be killed.
func stuckWorker(dir string) int {
	// Only the first worker leaves a holder: its replacement ends as
	// workers do, so that the pool can close.
	if pidFile, err := os.OpenFile(filepath.Join(dir, "holder.pid"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		exe, err := os.Executable()
		if err != nil {
			return 1
		}
		holder := exec.Command(exe, "linger")
		holder.Stdout, holder.Stderr = os.Stdout, os.Stderr
		holder.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if holder.Start() != nil {
			return 1
		}
		if _, err := pidFile.WriteString(strconv.Itoa(holder.Process.Pid)); err != nil || pidFile.Close() != nil {
			return 1
		}
	}
	return fakeWorker(func(io.Writer) error {
		os.WriteFile(filepath.Join(dir, "called"), nil, 0o600)
		time.Sleep(time.Hour)
		return nil
	})
}

// A call whose worker the supervisor kills (its deadline, its caller gone)
// ends at the kill, not when the process is gone: the kernel tears a
// killed process down when it gets a core, which on a loaded machine took
// up to 450 ms, and until then its pipes stay open. (The call read its
// reply until the pipe closed: a spinning plugin's call ended up to
// 510 ms past its deadline, a cancelled one up to 220 ms after the
// cancel.) Here the pipes stay open for good.
func TestKilledWorkersCallEndsWithoutItsTeardown(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cancel bool
		code   toolerr.Code
	}{
		{"deadline", false, toolerr.CodeTimeout},
		{"cancelled", true, toolerr.CodeCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := NewPool(context.Background(), Options{Command: []string{exe, "stuck-worker", dir}, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				killHolder(t, dir) // first: Close waits for the process's end
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := p.Close(ctx); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			m, err := p.Compile(context.Background(), enginetest.Spec("stuck", plugin.Limits{TimeoutMS: 200}))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := m.Call(ctx, "run", []byte("{}"))
				done <- err
			}()
			if tc.cancel {
				waitForFile(t, filepath.Join(dir, "called"), done)
				cancel()
			}
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the call did not end: it waited for its killed worker's pipes to close")
			}
			if code := toolerr.CodeOf(err); code != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
		})
	}
}

// waitForFile returns once path exists (the worker got the call).
func waitForFile(t *testing.T, path string, done <-chan error) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the call ended before the worker got it: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func killHolder(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "holder.pid"))
	if err != nil {
		t.Errorf("the stuck worker left no holder: %v", err)
		return
	}
	pid, _ := strconv.Atoi(string(b))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill holder %d: %v", pid, err)
	}
}
