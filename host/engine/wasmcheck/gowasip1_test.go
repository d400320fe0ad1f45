package wasmcheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoWasip1Module builds a real Go wasip1 c-shared module (~2.6 MB,
// ~1800 functions, 16 wasi_snapshot_preview1 imports, a funcref table
// WITHOUT a maximum but no table.grow) and checks that a permissive policy
// accepts it. It needs the Go toolchain and takes a few seconds, so it only
// runs when WASMCHECK_GO_WASIP1=1.
func TestGoWasip1Module(t *testing.T) {
	if os.Getenv("WASMCHECK_GO_WASIP1") != "1" {
		t.Skip("set WASMCHECK_GO_WASIP1=1 to build and check a Go wasip1 module")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module gowasm\n\ngo 1.24\n",
		"main.go": `package main

import "fmt"

//go:wasmexport f
func f(x int32) int32 { return int32(len(fmt.Sprintf("%d", x))) }

func main() {}
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "f.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Check(wasm, Policy{
		AllowedImports:  func(mod, name string) bool { return mod == "wasi_snapshot_preview1" },
		RequiredExports: []string{"f", "_initialize"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for _, imp := range m.Imports {
		imports = append(imports, imp.Module+"."+imp.Name)
	}
	t.Logf("%d bytes, %d functions, %d data segments (%d bytes), tables %+v, memories %+v, max locals %d, total locals %d",
		m.Size, m.Functions, m.DataSegments, m.DataBytes, m.Tables, m.Memories, m.MaxFunctionLocals, m.TotalLocals)
	t.Logf("imports: %s", strings.Join(imports, " "))

	// The host must list what it provides: without wasi the module is refused.
	_, err = Check(wasm, Policy{AllowedImports: func(mod, _ string) bool { return mod == "extism:host/env" }})
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Rule != RuleImportNotAllowed || !strings.Contains(err.Error(), "wasi_snapshot_preview1") {
		t.Errorf("without wasi: %v", err)
	}
}
