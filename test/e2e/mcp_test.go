package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// mcpClient is test/mcpclient (the official TypeScript MCP SDK), driven one
// JSON step per line.
type mcpClient struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startMCPClient(t *testing.T, w *world, args ...string) *mcpClient {
	t.Helper()
	root, err := testplugins.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", "mcpclient")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("TOOLHOST_CI") != "" {
			t.Fatalf("test/mcpclient/node_modules is missing in CI: run `npm ci` there (.ci/run does)")
		}
		t.Skip("test/mcpclient/node_modules is missing: run `cd test/mcpclient && npm ci` to run the MCP end-to-end tests")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	cmd := exec.Command(node, append([]string{filepath.Join(dir, "client.mjs")}, args...)...)
	cmd.Env = w.env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &mcpClient{t: t, cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mcp client exited with %v; stderr:\n%s", err, stderr.w)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("mcp client did not exit; stderr:\n%s", stderr.w)
		}
	})
	return c
}

// step sends one step and decodes its output line.
func (c *mcpClient) step(step string) map[string]any {
	c.t.Helper()
	if _, err := fmt.Fprintln(c.in, step); err != nil {
		c.t.Fatal(err)
	}
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("mcp client ended before answering %s", step)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			c.t.Fatalf("mcp client line %q: %v", line, err)
		}
		return v
	case <-time.After(60 * time.Second):
		c.t.Fatalf("no answer to %s within 60s", step)
	}
	return nil
}

func toolNamesOf(v map[string]any) []string {
	var names []string
	tools, _ := v["tools"].([]any)
	for _, tl := range tools {
		m, _ := tl.(map[string]any)
		names = append(names, fmt.Sprint(m["name"]))
	}
	return names
}

func contentText(v map[string]any) string {
	var b strings.Builder
	content, _ := v["content"].([]any)
	for _, c := range content {
		m, _ := c.(map[string]any)
		b.WriteString(fmt.Sprint(m["text"]))
	}
	return b.String()
}

// exercise lists, calls, and calls with bad arguments.
func exercise(t *testing.T, c *mcpClient) {
	t.Helper()
	list := c.step(`{"op":"list"}`)
	names := toolNamesOf(list)
	if len(names) != 2 || names[0] != "convert_time" && names[1] != "convert_time" {
		t.Fatalf("tools = %v", names)
	}
	if !strings.Contains(fmt.Sprint(list), "inputSchema") {
		t.Fatalf("tools without inputSchema: %v", list)
	}
	res := c.step(`{"op":"call","tool":"get_current_time","arguments":{"timezone":"Asia/Tokyo"},"validate":false}`)
	if res["isError"] != false || !strings.Contains(contentText(res), `"abbreviation":"JST"`) {
		t.Fatalf("call: %v", res)
	}
	bad := c.step(`{"op":"call","tool":"get_current_time","arguments":{"timezone":42},"validate":false}`)
	if bad["isError"] != true || !strings.Contains(contentText(bad), "invalid_arguments") || !strings.Contains(contentText(bad), "/timezone") {
		t.Fatalf("bad arguments: %v", bad)
	}
}

func TestMCPStdioWithoutServe(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	c := startMCPClient(t, w, "stdio", "--", w.bin, "mcp")
	exercise(t, c)
}

func TestMCPStdioAndHTTPWhileServing(t *testing.T) {
	w := newWorld(t)
	s := w.serve()

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"stdio", []string{"stdio", "--", w.bin, "mcp"}},
		{"http", []string{"http", s.url + "/mcp", "--token", s.token}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startMCPClient(t, w, tc.args...)
			if names := toolNamesOf(c.step(`{"op":"list"}`)); len(names) != 0 {
				t.Fatalf("tools before install: %v", names)
			}
			w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
			if got := c.step(`{"op":"wait_list_changed","timeout_ms":10000}`); got["received"] != true {
				t.Fatalf("no tools/list_changed after install: %v", got)
			}
			exercise(t, c)
			w.run("plugin", "remove", "time")
			if got := c.step(`{"op":"wait_list_changed","timeout_ms":10000}`); got["received"] != true {
				t.Fatalf("no tools/list_changed after remove: %v", got)
			}
			if names := toolNamesOf(c.step(`{"op":"list"}`)); len(names) != 0 {
				t.Fatalf("tools after remove: %v", names)
			}
		})
	}
}
