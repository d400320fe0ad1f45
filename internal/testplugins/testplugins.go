// Package testplugins builds the sample plugins for tests, once per test
// binary, and caches the wasm under build/plugins in the repository (the
// same place `make plugins` puts it), so a test run builds each sample at
// most once.
package testplugins

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

// RepoRoot returns the directory holding toolhost's go.mod.
func RepoRoot() (string, error) {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err == nil && bytes.Contains(data, []byte("module github.com/toolhost/toolhost\n")) {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = errors.New("testplugins: cannot find the toolhost repository root")
				return
			}
			dir = parent
		}
	})
	return root, rootErr
}

var (
	buildMu sync.Mutex
	built   = map[string]error{}
)

// Dir returns build/plugins/NAME holding plugin.json and plugin.wasm built
// from sample-plugins/NAME. It builds the wasm when it is missing or older
// than the sources.
func Dir(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := build(name)
	if err != nil {
		tb.Fatalf("build sample plugin %s: %v", name, err)
	}
	return dir
}

// Bundle returns an unsigned bundle of sample plugin NAME.
func Bundle(tb testing.TB, name string) *plugin.Bundle {
	tb.Helper()
	b, err := plugin.PackDir(Dir(tb, name))
	if err != nil {
		tb.Fatalf("pack sample plugin %s: %v", name, err)
	}
	return b
}

func build(name string) (string, error) {
	r, err := RepoRoot()
	if err != nil {
		return "", err
	}
	src := filepath.Join(r, "sample-plugins", name)
	out := filepath.Join(r, "build", "plugins", name)
	buildMu.Lock()
	defer buildMu.Unlock()
	if err, done := built[name]; done {
		return out, err
	}
	err = buildInto(src, out)
	built[name] = err
	return out, err
}

func buildInto(src, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	wasm := filepath.Join(out, "plugin.wasm")
	if fresh(wasm, src) {
		return copyFile(filepath.Join(src, "plugin.json"), filepath.Join(out, "plugin.json"))
	}
	tmp := fmt.Sprintf("%s.%d.tmp", wasm, os.Getpid())
	cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-o", tmp, ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if _, err := os.Stat(filepath.Join(src, "package.json")); err == nil {
		// An AssemblyScript sample, built as `make plugins` does.
		if err := npmCI(src); err != nil {
			return err
		}
		cmd = exec.Command("npx", "--no-install", "asc", "assembly/index.ts", "--config", "asconfig.json", "--target", "release", "--outFile", tmp)
	}
	cmd.Dir = src
	if outb, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s in %s: %v\n%s", strings.Join(cmd.Args[:2], " "), src, err, outb)
	}
	if err := os.Rename(tmp, wasm); err != nil {
		return err
	}
	return copyFile(filepath.Join(src, "plugin.json"), filepath.Join(out, "plugin.json"))
}

// npmCI installs an AssemblyScript sample's toolchain from its committed
// package-lock.json unless node_modules already holds it.
func npmCI(src string) error {
	lock, err := os.Stat(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return err
	}
	if have, err := os.Stat(filepath.Join(src, "node_modules", ".package-lock.json")); err == nil && !have.ModTime().Before(lock.ModTime()) {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s (needs node and npm): %v\n%s", src, err, out)
	}
	return nil
}

// fresh reports whether wasm exists and is newer than every file in src,
// the samples' shared internal packages and the sample-plugins go.mod/go.sum.
func fresh(wasm, src string) bool {
	wi, err := os.Stat(wasm)
	if err != nil {
		return false
	}
	newest := time.Time{}
	paths, _ := filepath.Glob(filepath.Join(src, "*"))
	shared, _ := filepath.Glob(filepath.Join(src, "..", "internal", "*", "*.go"))
	paths = append(paths, shared...)
	as, _ := filepath.Glob(filepath.Join(src, "assembly", "*.ts"))
	paths = append(paths, as...)
	paths = append(paths, filepath.Join(src, "..", "go.mod"), filepath.Join(src, "..", "go.sum"))
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	return !newest.After(wi.ModTime())
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(to); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", to, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, to)
}

var (
	programsMu sync.Mutex
	programs   = map[string]*program{}
)

type program struct {
	once sync.Once
	path string
	err  error
}

// Toolhost builds cmd/toolhost once per test binary, into a temporary
// directory, and returns the executable's path.
func Toolhost(tb testing.TB) string {
	tb.Helper()
	return Program(tb, "cmd/toolhost")
}

// Program builds the main package at pkg (a directory of this repository,
// e.g. "cmd/toolhost") once per test binary, into a temporary directory,
// and returns the executable's path.
func Program(tb testing.TB, pkg string) string {
	tb.Helper()
	programsMu.Lock()
	p := programs[pkg]
	if p == nil {
		p = &program{}
		programs[pkg] = p
	}
	programsMu.Unlock()
	p.once.Do(func() {
		r, err := RepoRoot()
		if err != nil {
			p.err = err
			return
		}
		dir, err := os.MkdirTemp("", "toolhost-bin")
		if err != nil {
			p.err = err
			return
		}
		p.path = filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", p.path, "./"+pkg)
		cmd.Dir = r
		if out, err := cmd.CombinedOutput(); err != nil {
			p.err = fmt.Errorf("go build ./%s: %v\n%s", pkg, err, out)
		}
	})
	if p.err != nil {
		tb.Fatal(p.err)
	}
	return p.path
}

var (
	cacheMu  sync.Mutex
	cacheDir string
)

// CacheDir returns the wazero compilation cache directory that every
// engine of this test binary shares, creating it on first use. Compiling a
// Go guest (and the Extism kernel) under -race takes minutes; with one
// cache per test binary each module compiles once per run instead of once
// per test. Call Main from the package's TestMain so the directory is
// removed at the end.
func CacheDir(tb testing.TB) string {
	tb.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if cacheDir == "" {
		dir, err := os.MkdirTemp("", "toolhost-test-cache-")
		if err != nil {
			tb.Fatalf("create the shared compilation cache: %v", err)
		}
		cacheDir = dir
	}
	return cacheDir
}

// Main runs the tests and removes the shared compilation cache; a
// package's TestMain calls os.Exit(testplugins.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if cacheDir != "" {
		os.RemoveAll(cacheDir)
		cacheDir = ""
	}
	return code
}
