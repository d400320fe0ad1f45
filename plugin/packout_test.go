package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckPackOutput(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"plugin.json", "plugin.wasm", "main.go", "old.plugin"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(dir, "plugin.json"), link); err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Wasm: "plugin.wasm"}
	for _, tc := range []struct {
		out    string
		refuse bool
	}{
		{filepath.Join(dir, "plugin.json"), true},
		{filepath.Join(dir, "plugin.wasm"), true},
		{filepath.Join(dir, ".", "sub", "..", "plugin.wasm"), true},
		{link, true},
		{filepath.Join(dir, "main.go"), true},
		{filepath.Join(dir, "old.plugin"), false},
		{filepath.Join(dir, "new.plugin"), false},
		{filepath.Join(dir, "notes.txt"), false}, // new, not a source
		{filepath.Join(t.TempDir(), "plugin.json"), false},
	} {
		err := CheckPackOutput(dir, m, tc.out)
		if got := errors.Is(err, ErrOutputIsSource); got != tc.refuse {
			t.Errorf("CheckPackOutput(%s) = %v, want refused %v", tc.out, err, tc.refuse)
		}
	}
	// The module still to be built is refused by name.
	os.Remove(filepath.Join(dir, "plugin.wasm"))
	if err := CheckPackOutput(dir, m, filepath.Join(dir, "plugin.wasm")); !errors.Is(err, ErrOutputIsSource) {
		t.Errorf("output over the module still to be built: %v, want refused", err)
	}
}
