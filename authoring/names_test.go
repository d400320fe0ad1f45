package authoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGoTemplateResolvesWhateverTheName: every name Init accepts gives a
// Go plugin whose packages resolve. The module was named after the plugin,
// so a plugin called time or fmt clashed with the standard library
// ("ambiguous import"), and std, all, go or con were not module paths at
// all: the template failed its first build. `go list -deps -test` finds
// both without compiling.
func TestGoTemplateResolvesWhateverTheName(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, name := range []string{"time", "fmt", "std", "all", "cmd", "go", "con", "main", "a-"} {
		dir := filepath.Join(t.TempDir(), name)
		if _, err := Init(dir, name, LangGo); err != nil {
			t.Fatal(err)
		}
		list := exec.Command("go", "list", "-deps", "-test", "./...")
		list.Dir = dir
		list.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := list.CombinedOutput(); err != nil {
			t.Errorf("plugin %q: its packages do not resolve: %v\n%s", name, err, out)
		}
	}
}
