package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// TestShutdownDoesNotWaitForClientsThatDoNotRead: SIGTERM while clients
// that do not read their answers hold them (12 MiB each, more than the
// sockets buffer) on the JSON route and on /mcp: serve closes their
// connections a grace after the last call and exits 0, and their calls
// are recorded. It used to wait for them until its 65 s bound and exit 1
// ("shutdown: context deadline exceeded").
func TestShutdownDoesNotWaitForClientsThatDoNotRead(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	w.installBigOutput()
	s := w.serve()

	// An MCP session, opened by a client that reads.
	hc := &http.Client{}
	req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`))
	mcpHeaders(req.Header, s.token, "")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
	}

	// The clients that never read.
	for _, r := range []struct{ path, body, session string }{
		{"/v1/tools/big_output/call", `{"arguments":{}}`, ""},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big_output","arguments":{}}}`, session},
	} {
		conn := dialUnread(t, s.url)
		defer conn.Close()
		h := http.Header{}
		mcpHeaders(h, s.token, r.session)
		var head strings.Builder
		fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", r.path, strings.TrimPrefix(s.url, "http://"), len(r.body))
		h.Write(&head)
		if _, err := io.WriteString(conn, head.String()+"\r\n"+r.body); err != nil {
			t.Fatal(err)
		}
	}
	// Both calls ended (and were recorded): what is left is their answers.
	for {
		out := w.run("audit", "list", "--tool", "big_output", "--json")
		if strings.Count(out, `"outcome":"ok"`) == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still runs 30s after SIGTERM, waiting for clients that do not read their answers\n%s", s.logs)
	}
	if !strings.Contains(s.logs.String(), "closing their connections") {
		t.Errorf("serve's log does not say it closed the connections of clients that did not read:\n%s", s.logs)
	}
	w.run("audit", "verify")
}

// installBigOutput installs plugin "big": tool big_output answers 2 MiB
// of zero bytes, 12 MiB as a JSON string.
func (w *world) installBigOutput() {
	w.t.Helper()
	root, err := testplugins.RepoRoot()
	if err != nil {
		w.t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join(root, "host/engine/enginetest/testdata/suite.wasm"))
	if err != nil {
		w.t.Fatal(err)
	}
	dir := filepath.Join(w.dir, "big")
	manifest := `{"name": "big", "version": "1.0.0", "description": "A 2 MiB answer.", "wasm": "plugin.wasm",
  "tools": [{"name": "big_output", "description": "2 MiB of output.", "export": "big_output", "parameters": {"type": "object"}}],
  "limits": {"memory_pages": 64, "timeout_ms": 5000, "max_output_bytes": 4194304},
  "permissions": {"allowed_hosts": [], "allowed_paths": {}}}`
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.json"), []byte(manifest), 0o644); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), wasm, 0o644); err != nil {
		w.t.Fatal(err)
	}
	bundle := filepath.Join(w.dir, "big.plugin")
	w.run("plugin", "pack", dir, "-o", bundle)
	w.run("curator", "sign", "--key", filepath.Join(w.dir, "alice.key"), bundle)
	w.run("plugin", "install", bundle)
}

// mcpHeaders sets the headers of an authorized /mcp POST (of session,
// when given).
func mcpHeaders(h http.Header, token, session string) {
	h.Set("Authorization", "Bearer "+token)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		h.Set("Mcp-Session-Id", session)
		h.Set("MCP-Protocol-Version", "2025-11-25")
	}
}

// dialUnread connects to the server at url with a 4 KiB receive buffer,
// for a client that will not read.
func dialUnread(t *testing.T, url string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}
