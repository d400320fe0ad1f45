package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/toolhost/toolhost/internal/testplugins"
)

func TestMain(m *testing.M) {
	// Sandbox workers re-execute this binary (os.Executable) with
	// "sandbox-worker": run the CLI for them.
	if len(os.Args) > 1 && os.Args[1] == "sandbox-worker" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"toolhost": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI journeys in testdata/script. Each script gets
// its own TOOLHOST_HOME, and in $WORK: time.plugin (the unsigned sample
// bundle) and time-dir/ (the unpacked sample plugin directory).
func TestScripts(t *testing.T) {
	timeBundle := testplugins.Bundle(t, "time").Bytes()
	timeDir := testplugins.Dir(t, "time")
	notesBundle := testplugins.Bundle(t, "notes").Bytes()
	// One compilation cache for all scripts: compiling the Go sample takes
	// seconds, and the cache is keyed by the wasm's hash.
	cache := t.TempDir()
	goEnv := goEnvironment(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			env.Setenv("TOOLHOST_HOME", home)
			env.Setenv("TOOLHOST_PASSPHRASE", "")
			for k, v := range goEnv { // plugin build runs the go command
				env.Setenv(k, v)
			}
			if err := os.MkdirAll(filepath.Join(home, "cache"), 0o700); err != nil {
				return err
			}
			if err := os.Symlink(cache, filepath.Join(home, "cache", "wazero")); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(env.WorkDir, "time.plugin"), timeBundle, 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(env.WorkDir, "notes.plugin"), notesBundle, 0o644); err != nil {
				return err
			}
			return copyDir(timeDir, filepath.Join(env.WorkDir, "time-dir"))
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"flipbyte":      cmdFlipByte,
			"edit":          cmdEdit,
			"waitfile":      cmdWaitFile,
			"decidewaiting": cmdDecideWaiting,
			"waitserving":   cmdWaitServing,
			"mkfifo":        cmdMkfifo,
			"truncate":      cmdTruncate,
			"keeplines":     cmdKeepLines,
			"rawbundle":     cmdRawBundle,
		},
	})
}

// goEnvironment is what the go command needs under testscript's empty
// HOME: the caches of the user running the tests.
func goEnvironment(t *testing.T) map[string]string {
	env := map[string]string{}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY").Output()
	if err != nil {
		return env
	}
	for i, v := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		env[[]string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY"}[i]] = v
	}
	return env
}

// edit FILE OLD NEW: replace the first OLD in FILE with NEW (OLD must occur).
func cmdEdit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: edit FILE OLD NEW")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	if !strings.Contains(string(data), args[1]) {
		ts.Fatalf("%s does not contain %q", args[0], args[1])
	}
	ts.Check(os.WriteFile(path, []byte(strings.Replace(string(data), args[1], args[2], 1)), 0o644))
}

// flipbyte FILE OFFSET: xor the byte at OFFSET (negative: from the end) with 0x01.
func cmdFlipByte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 {
		off += len(data)
	}
	if off < 0 || off >= len(data) {
		ts.Fatalf("offset %d outside %d bytes", off, len(data))
	}
	data[off] ^= 0x01
	ts.Check(os.WriteFile(path, data, 0o644))
}

func copyDir(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"plugin.json", "plugin.wasm"} {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			return fmt.Errorf("copy %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// waitfile FILE: wait up to 60 s for FILE to exist (a background
// command's socket or output).
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	ts.Fatalf("%s did not appear within 60 s", args[0])
}
