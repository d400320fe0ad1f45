package wasmcheck

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzCheck: Check never panics, always returns one of its typed errors, is
// deterministic, and accepted modules have a consistent summary.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.wasm"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	for _, tc := range refusals() {
		f.Add(tc.wasm)
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		p := Policy{
			AllowedImports:  func(m, n string) bool { return len(n)%2 == 0 },
			RequiredExports: []string{"run"},
		}
		m, err := Check(wasm, p)
		if err := checkResult(m, err); err != nil {
			t.Fatal(err)
		}
		m2, err2 := Check(wasm, p)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("nondeterministic: %v / %v", err, err2)
		}
		if m != nil {
			if m.Size != len(wasm) || m2.Size != m.Size {
				t.Fatalf("size %d for %d bytes", m.Size, len(wasm))
			}
			if err == nil {
				if len(m.Memories) > 1 || m.DataBytes > int64(len(wasm)) || m.ElementEntries > len(wasm) {
					t.Fatalf("accepted inconsistent module: %+v", m)
				}
				for _, tb := range m.Tables {
					if !tb.HasMax && m.UsesTableGrow {
						t.Fatalf("accepted growable table without max: %+v", m)
					}
				}
			}
		}
	})
}
