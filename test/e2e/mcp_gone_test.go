package e2e

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// An MCP client that vanishes (closes the pipe `toolhost mcp` answers on)
// must not kill the process with SIGPIPE: it ends like any session, its
// store closed and its control socket removed, so the next command works.
func TestMCPStdioClientGoneEndsCleanly(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	cmd := w.cmd("mcp")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	logs := &testplugins.SyncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	out.Close() // the client is gone before the server answers
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"gone","version":"0"}}}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	// The end of the input: the server still answers what it read (and
	// so writes to the closed pipe) before the session ends.
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("toolhost mcp did not end within 30 s of its client going away; stderr:\n%s", logs)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("toolhost mcp was killed by %v when its client went away; stderr:\n%s", ws.Signal(), logs)
		}
	}
	if _, err := os.Stat(filepath.Join(w.home, "control.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control socket left behind (stat: %v)", err)
	}
	if list := w.run("plugin", "list"); !strings.Contains(list, "time") {
		t.Errorf("plugin list after the session:\n%s", list)
	}
}
