package userfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// within fails the test if f does not return in time: the bug was a
// read that never returned.
func within[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("blocked")
		panic("unreachable")
	}
}

func TestReadRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "f.plugin")
	mkfifo(t, fifo)
	linkToFIFO := filepath.Join(dir, "link.plugin")
	if err := os.Symlink(fifo, linkToFIFO); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{fifo, fifo + " is a named pipe, not a file"},
		{linkToFIFO, linkToFIFO + " is a named pipe, not a file"},
		{dir, dir + " is a directory, not a file"},
		{os.DevNull, os.DevNull + " is a character device, not a file"},
	} {
		err := within(t, func() error { _, err := Read(tt.path, 100); return err })
		var nr *NotRegularError
		if !errors.As(err, &nr) || err.Error() != tt.want {
			t.Errorf("Read(%s) = %v, want %q", tt.path, err, tt.want)
		}
	}
}

func TestReadFollowsLinksAndCaps(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a")
	writeFile(t, file, "hello")
	link := filepath.Join(dir, "link")
	if err := os.Symlink("a", link); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(link, 5); err != nil || string(data) != "hello" {
		t.Errorf("Read(link) = %q, %v", data, err)
	}
	var big *TooLargeError
	if _, err := Read(file, 4); !errors.As(err, &big) || err.Error() != file+" is larger than the limit of 4 bytes" {
		t.Errorf("Read(5 bytes, limit 4) = %v", err)
	}
}

func TestReadInStaysInside(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	writeFile(t, secret, "secret")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "real.wasm"), "inside")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"inside.wasm":   "real.wasm",
		"absolute.wasm": secret,
		"relative.wasm": filepath.Join("..", filepath.Base(outside), "secret"),
		"viasub.wasm":   "sub/../../" + filepath.Base(outside) + "/secret",
		"dangling.wasm": "nothing",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	mkfifo(t, filepath.Join(dir, "fifo.wasm"))

	if data, err := ReadIn(dir, "inside.wasm", 100); err != nil || string(data) != "inside" {
		t.Errorf("ReadIn(link inside) = %q, %v", data, err)
	}
	for _, name := range []string{"absolute.wasm", "relative.wasm", "viasub.wasm"} {
		_, err := ReadIn(dir, name, 100)
		var esc *EscapeError
		want := fmt.Sprintf("%s is a symbolic link to %s, outside %s", filepath.Join(dir, name), links[name], dir)
		if !errors.As(err, &esc) || err.Error() != want {
			t.Errorf("ReadIn(%s) = %v\nwant %s", name, err, want)
		}
	}
	if _, err := ReadIn(dir, "dangling.wasm", 100); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(dir, "dangling.wasm")) {
		t.Errorf("ReadIn(dangling) = %v", err)
	}
	if _, err := ReadIn(dir, "missing.wasm", 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadIn(missing) = %v", err)
	}
	err := within(t, func() error { _, err := ReadIn(dir, "fifo.wasm", 100); return err })
	if want := filepath.Join(dir, "fifo.wasm") + " is a named pipe, not a file"; err == nil || err.Error() != want {
		t.Errorf("ReadIn(fifo) = %v, want %q", err, want)
	}
}

func TestReplaceWritesNoFixedName(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious.txt")
	writeFile(t, precious, "keep")
	out := filepath.Join(dir, "b.plugin")
	// The old code wrote through OUT.tmp: a link planted there was
	// written through, and then renamed over OUT.
	if err := os.Symlink(precious, out+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := Replace(out, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(precious); string(data) != "keep" {
		t.Errorf("precious.txt = %q; written through the planted link", data)
	}
	if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("b.plugin: %v, %v; want a regular file", fi, err)
	}
	if data, _ := os.ReadFile(out); string(data) != "new" {
		t.Errorf("b.plugin = %q", data)
	}
	assertNoTemporaries(t, dir, 3) // precious.txt, b.plugin, b.plugin.tmp
}

func TestReplaceKeepsLinksAndModes(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.plugin")
	writeFile(t, target, "old")
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.plugin")
	if err := os.Symlink("real.plugin", link); err != nil {
		t.Fatal(err)
	}
	if err := Replace(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != fs.ModeSymlink {
		t.Errorf("the link was replaced by a file: %v, %v", fi, err)
	}
	fi, err := os.Stat(target)
	if data, _ := os.ReadFile(target); err != nil || string(data) != "new" || fi.Mode().Perm() != 0o640 {
		t.Errorf("target = %q, mode %v, %v; want \"new\", 0640", data, fi.Mode(), err)
	}

	if err := Replace(filepath.Join(dir, "dangling"), nil); err != nil {
		t.Fatal(err) // a new file
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "broken")); err != nil {
		t.Fatal(err)
	}
	if err := Replace(filepath.Join(dir, "broken"), nil); err == nil || !strings.Contains(err.Error(), "point the link at an existing file, or remove it") {
		t.Errorf("Replace(broken link) = %v", err)
	}
	mkfifo(t, filepath.Join(dir, "fifo"))
	if err := Replace(filepath.Join(dir, "fifo"), nil); err == nil || !strings.Contains(err.Error(), "is a named pipe, not a file") {
		t.Errorf("Replace(fifo) = %v", err)
	}
	assertNoTemporaries(t, dir, 5)
}

func assertNoTemporaries(t *testing.T, dir string, want int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != want {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v; want %d files (a temporary file left behind?)", dir, names, want)
	}
}

// TestUpdateLosesNothing runs concurrent Updates that each add a line;
// each change waits a little between reading and returning, as a signer
// does, so without the lock most lines would be lost.
func TestUpdateLosesNothing(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "b.plugin")
	writeFile(t, target, "")
	link := filepath.Join(dir, "link.plugin")
	if err := os.Symlink("b.plugin", link); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		path := target
		if i%2 == 1 {
			path = link // the lock is on the file, whichever path names it
		}
		wg.Go(func() {
			errs[i] = Update(context.Background(), path, 1<<10, func(old []byte) ([]byte, error) {
				time.Sleep(5 * time.Millisecond)
				return fmt.Appendf(bytes.Clone(old), "%d\n", i), nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
	}
	data, _ := os.ReadFile(target)
	if lines := strings.Count(string(data), "\n"); lines != n {
		t.Errorf("%d of %d updates kept:\n%s", lines, n, data)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != fs.ModeSymlink {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
	assertNoTemporaries(t, dir, 2)
}

func TestUpdateNoChangeAndErrors(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "b.plugin")
	writeFile(t, target, "old")
	before, _ := os.Stat(target)
	if err := Update(context.Background(), target, 10, func([]byte) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(target); !os.SameFile(before, after) {
		t.Error("nil from change replaced the file")
	}
	boom := errors.New("boom")
	if err := Update(context.Background(), target, 10, func([]byte) ([]byte, error) { return []byte("x"), boom }); !errors.Is(err, boom) {
		t.Errorf("Update = %v, want change's error", err)
	}
	if data, _ := os.ReadFile(target); string(data) != "old" {
		t.Errorf("file = %q after a failed change", data)
	}
	if err := Update(context.Background(), filepath.Join(dir, "missing"), 10, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Update(missing) = %v", err)
	}
	mkfifo(t, filepath.Join(dir, "fifo"))
	err := within(t, func() error { return Update(context.Background(), filepath.Join(dir, "fifo"), 10, nil) })
	var nr *NotRegularError
	if !errors.As(err, &nr) {
		t.Errorf("Update(fifo) = %v", err)
	}

	// Held by someone else: Update waits, and gives up when ctx ends.
	f, err := os.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := Update(ctx, target, 10, func([]byte) ([]byte, error) { return []byte("x"), nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Update(locked) = %v, want the context's error", err)
	}
}
