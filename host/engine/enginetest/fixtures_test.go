package enginetest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The checked-in .wasm fixtures are what wat2wasm makes of the .wat next to
// them.
func TestFixturesMatchSources(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm is not installed")
	}
	for _, name := range []string{"suite", "start_spin"} {
		out := filepath.Join(t.TempDir(), name+".wasm")
		if b, err := exec.Command("wat2wasm", filepath.Join("testdata", name+".wat"), "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", name, err, b)
		}
		want, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s.wasm is stale: run wat2wasm testdata/%s.wat -o testdata/%s.wasm", name, name, name)
		}
	}
}
