package watch_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/watch"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/plugin"
)

// fakeHost records what the watcher asks of it. installed maps a plugin
// name to the digest installed, as the host would report it.
type fakeHost struct {
	installed map[string]string
	removed   []string
}

func (f *fakeHost) Install(_ context.Context, b *plugin.Bundle, _ host.InstallOptions) (host.InstallReport, error) {
	m := b.Manifest()
	rep := host.InstallReport{Name: m.Name, Version: m.Version, Digest: b.Digest()}
	if d, ok := f.installed[m.Name]; ok {
		if d == b.Digest().String() {
			rep.Unchanged = true
			return rep, nil
		}
		rep.Previous = &host.PluginInfo{Name: m.Name}
	}
	f.installed[m.Name] = b.Digest().String()
	return rep, nil
}

func (f *fakeHost) Remove(_ context.Context, name string) error {
	if _, ok := f.installed[name]; !ok {
		return host.ErrNotInstalled
	}
	delete(f.installed, name)
	f.removed = append(f.removed, name)
	return nil
}

// scanner returns a watcher over a fresh directory, driven by explicit
// scans (a file is processed on the second scan that sees it unchanged).
func scanner(t *testing.T, h watch.Installer) (dir string, settle func(), logs *testplugins.SyncBuffer) {
	t.Helper()
	dir = t.TempDir()
	logs = new(testplugins.SyncBuffer)
	w, err := watch.New(watch.Options{Dir: dir, Host: h, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return dir, func() { w.Scan(context.Background()); w.Scan(context.Background()) }, logs
}

// A bundle dropped into the directory while the watcher runs that matches
// a plugin installed with the CLI is not adopted: deleting it leaves the
// plugin installed.
func TestUnchangedBundleIsNotAdopted(t *testing.T) {
	data := echoBundle(t, "text", "1.0.0", "", nil)
	b, err := plugin.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fh := &fakeHost{installed: map[string]string{"text": b.Digest().String()}} // installed by the CLI
	dir, settle, logs := scanner(t, fh)
	settle() // the watcher runs
	path := filepath.Join(dir, "text.plugin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	settle()
	if !strings.Contains(logs.String(), "deleting the file will leave it installed") {
		t.Errorf("the log does not say the file does not own the plugin:\n%s", logs)
	}
	os.Remove(path)
	settle()
	if len(fh.removed) != 0 || fh.installed["text"] == "" {
		t.Fatalf("deleting a copy of a CLI-installed plugin removed it: removed %v\n%s", fh.removed, logs)
	}
}

// The bundles in the directory when the watcher starts (after a restart)
// own their plugins, installed already or not: the directory as the
// operator left it is what it manages, and deleting one removes its plugin.
func TestBundlesPresentAtStartAreOwned(t *testing.T) {
	data := echoBundle(t, "text", "1.0.0", "", nil)
	b, err := plugin.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fh := &fakeHost{installed: map[string]string{"text": b.Digest().String()}} // installed before the restart
	dir := t.TempDir()
	path := filepath.Join(dir, "text.plugin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	logs := new(testplugins.SyncBuffer)
	w, err := watch.New(watch.Options{Dir: dir, Host: fh, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.Scan(context.Background())
	w.Scan(context.Background())
	os.Remove(path)
	w.Scan(context.Background())
	if !slices.Equal(fh.removed, []string{"text"}) {
		t.Fatalf("removed %v after deleting a bundle present at start, want [text]\n%s", fh.removed, logs)
	}
}

// A file that installed or upgraded a plugin owns it, also after being
// touched (processed again, now unchanged); deleting it removes the plugin.
func TestInstalledAndUpgradedBundlesAreOwned(t *testing.T) {
	for _, tc := range []struct {
		name         string
		preinstalled bool
	}{{"installed", false}, {"upgraded", true}} {
		t.Run(tc.name, func(t *testing.T) {
			fh := &fakeHost{installed: map[string]string{}}
			if tc.preinstalled {
				fh.installed["text"] = "an older digest"
			}
			dir, settle, logs := scanner(t, fh)
			path := filepath.Join(dir, "text.plugin")
			if err := os.WriteFile(path, echoBundle(t, "text", "1.0.1", "", nil), 0o644); err != nil {
				t.Fatal(err)
			}
			settle()
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(path, later, later); err != nil { // touch: processed again, unchanged
				t.Fatal(err)
			}
			settle()
			os.Remove(path)
			settle()
			if !slices.Equal(fh.removed, []string{"text"}) {
				t.Fatalf("removed %v, want [text]\n%s", fh.removed, logs)
			}
		})
	}
}

// A FIFO named like a bundle is skipped with a reason, once, without
// blocking: a bundle dropped beside it is still installed.
func TestFIFOIsSkippedWithoutBlocking(t *testing.T) {
	fh := &fakeHost{installed: map[string]string{}}
	dir, settle, logs := scanner(t, fh)
	if err := syscall.Mkfifo(filepath.Join(dir, "x.plugin"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		settle()
		if err := os.WriteFile(filepath.Join(dir, "text.plugin"), echoBundle(t, "text", "1.0.0", "", nil), 0o644); err != nil {
			t.Error(err)
		}
		settle()
		settle()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("scanning a directory holding a FIFO blocked")
	}
	if fh.installed["text"] == "" {
		t.Errorf("a bundle beside the FIFO was not installed\n%s", logs)
	}
	if n := strings.Count(logs.String(), "not a regular file (a named pipe)"); n != 1 {
		t.Errorf("the FIFO was reported %d times, want once:\n%s", n, logs)
	}
}

// A whole bundle is installed by the first scan that sees it; a copy still
// under way (a prefix of the bundle) is neither installed nor refused until
// it holds still, and the finished copy is then installed.
func TestWholeBundleIsTakenAtOnce(t *testing.T) {
	data := echoBundle(t, "text", "1.0.0", "", nil)
	fh := &fakeHost{installed: map[string]string{}}
	dir := t.TempDir()
	logs := new(testplugins.SyncBuffer)
	w, err := watch.New(watch.Options{Dir: dir, Host: fh, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	scan := func() { w.Scan(context.Background()) }
	scan() // the watcher runs

	path := filepath.Join(dir, "text.plugin")
	for _, cut := range []int{1, 511, 512, len(data) / 2, len(data) - 1024, len(data) - 1} {
		if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		scan()
		if len(fh.installed) != 0 || strings.Contains(logs.String(), "refused") {
			t.Fatalf("a copy cut at %d of %d bytes, seen once: installed %v, log:\n%s", cut, len(data), fh.installed, logs)
		}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	scan()
	if fh.installed["text"] == "" {
		t.Fatalf("a whole bundle was not installed by the first scan that saw it:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "watch: installed") {
		t.Errorf("no install logged:\n%s", logs)
	}
}
