package sandbox

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/toolerr"
)

// TestFullCacheIsNotABadModule fills the filesystem of the compilation
// cache: compiling a good module fails as an internal error naming the
// cache, not as "the module does not compile" (which refuses the plugin).
func TestFullCacheIsNotABadModule(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	e, err := NewInProcess(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	// Leave no room for the compiled code.
	f, _ := os.Create(dir + "/filler")
	for {
		if _, err := f.Write(make([]byte, 64<<10)); err != nil {
			break
		}
	}
	f.Close()
	s := loadSample(t, "time")
	_, err = e.Compile(context.Background(), specOf(t, s.manifest, s.wasm))
	if toolerr.CodeOf(err) != toolerr.CodeInternal || !strings.Contains(err.Error(), "compilation cache") {
		t.Fatalf("compile with a full cache: %v, want internal_error naming the compilation cache", err)
	}
	t.Logf("%v", err)
}
