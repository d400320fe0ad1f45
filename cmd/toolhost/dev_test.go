package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/authoring"
	"github.com/toolhost/toolhost/internal/testplugins"
)

// TestPluginDevReloadsOnEdit runs `toolhost plugin dev` on a fresh Go
// plugin: the tool answers over HTTP, an edit to its source shows up in
// the next call without a restart, and the throwaway home is gone after.
func TestPluginDevReloadsOnEdit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	if _, err := authoring.Init(dir, "hello", authoring.LangGo); err != nil {
		t.Fatal(err)
	}
	operatorHome := t.TempDir()
	t.Setenv("TOOLHOST_HOME", operatorHome)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testplugins.SyncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"plugin", "dev", dir, "--addr", "127.0.0.1:0"}, strings.NewReader(""), &stdout, &stderr)
	}()
	defer func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Error("plugin dev did not stop within 30 s of its context ending")
		}
	}()

	wait := func(what string, re *regexp.Regexp) []string {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute) // a cold Go build on a loaded box
		for time.Now().Before(deadline) {
			if m := re.FindStringSubmatch(stdout.String()); m != nil {
				return m
			}
			select {
			case code := <-exited:
				t.Fatalf("plugin dev exited %d before %s:\n%s\n%s", code, what, stdout.String(), stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
		t.Fatalf("no %s:\n%s\n%s", what, stdout.String(), stderr.String())
		return nil
	}
	home := wait("dev home", regexp.MustCompile(`dev home (\S+)`))[1]
	url := wait("URL", regexp.MustCompile(`serving \d+ tools? on (http://\S+)`))[1]
	token, err := os.ReadFile(filepath.Join(home, "token"))
	if err != nil {
		t.Fatal(err)
	}
	call := func() string {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/v1/tools/greet/call", strings.NewReader(`{"arguments":{"name":"Ada"}}`))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if got := call(); !strings.Contains(got, `"Hello, Ada!"`) {
		t.Fatalf("first call: %s", got)
	}

	// The call right after each edit, without waiting for the rebuild to
	// show, runs the new code: several edits in a row, one that does not
	// compile (the previous build answers), and the good one after it.
	src := filepath.Join(dir, "greet.go")
	code, _ := os.ReadFile(src)
	for _, edit := range []struct{ greeting, want string }{
		{`"Hi, "`, `"Hi, Ada!"`},
		{`"Hey, "`, `"Hey, Ada!"`},
		{`"Hey, " +`, `"Hey, Ada!"`}, // a syntax error: greet.go no longer compiles
		{`"Howdy, "`, `"Howdy, Ada!"`},
	} {
		if err := os.WriteFile(src, bytes.Replace(code, []byte(`"Hello, "`), []byte(edit.greeting), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := call(); !strings.Contains(got, edit.want) {
			t.Fatalf("call right after the edit to %s: %s, want %s\n%s", edit.greeting, got, edit.want, stdout.String())
		}
	}
	if !strings.Contains(stdout.String(), "build failed (the previous build keeps serving)") {
		t.Errorf("the edit that does not compile was not reported:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), `msg="tool call"`) {
		t.Errorf("no call log in the terminal:\n%s", stderr.String())
	}

	// Renaming the plugin replaces the one served: its tool keeps
	// answering, from the renamed plugin alone (the old one refused it as
	// a tool name conflict and kept serving).
	manifest := filepath.Join(dir, "plugin.json")
	m, _ := os.ReadFile(manifest)
	if err := os.WriteFile(manifest, bytes.Replace(m, []byte(`"name": "hello"`), []byte(`"name": "hello2"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(stdout.String())
	if got := call(); !strings.Contains(got, `"Howdy, Ada!"`) {
		t.Fatalf("call after the rename: %s", got)
	}
	if after := stdout.String()[before:]; !strings.Contains(after, "serving hello2 0.1.0: greet") || strings.Contains(after, "build failed") {
		t.Fatalf("after renaming the plugin:\n%s", after)
	}

	cancel()
	<-exited
	exited <- 0
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("the throwaway home %s is still there: %v", home, err)
	}
	if entries, _ := os.ReadDir(operatorHome); len(entries) != 0 {
		t.Errorf("plugin dev wrote into the operator's home: %v", entries)
	}
}

// TestPluginDevIgnoresItsOwnOutput: `plugin dev > dev.log` in the plugin's
// directory is not a change of its sources (every rebuild wrote lines that
// started the next, for ever); a source edit still is.
func TestPluginDevIgnoresItsOwnOutput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "dev.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	d := newDevLoop(&globalOptions{stdout: log, stderr: log}, dir, filepath.Join(t.TempDir(), "dev.plugin"))
	before := d.fingerprint()
	if _, err := log.WriteString("change in .: rebuilding\n"); err != nil {
		t.Fatal(err)
	}
	if after := d.fingerprint(); after != before {
		t.Errorf("writing its own output changed the fingerprint:\n%s\n%s", before, after)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if after := d.fingerprint(); after == before {
		t.Error("a source edit did not change the fingerprint")
	}
}

// TestPluginDevSeesSameSizeEditsWithinOneClockTick: two saves of the same
// size whose modification times the kernel's coarse clock made equal are
// two versions of the source, not one.
func TestPluginDevSeesSameSizeEditsWithinOneClockTick(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "greet.go")
	if err := os.WriteFile(src, []byte(`package main; const greeting = "Hello"`), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	d := newDevLoop(&globalOptions{stdout: io.Discard, stderr: io.Discard}, dir, filepath.Join(t.TempDir(), "dev.plugin"))
	before := d.fingerprint()
	if err := os.WriteFile(src, []byte(`package main; const greeting = "Howdy"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(src, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if after := d.fingerprint(); after == before {
		t.Errorf("a same-size edit within one clock tick did not change the fingerprint:\n%s", after)
	}
}
