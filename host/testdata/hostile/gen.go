//go:build ignore

// gen rebuilds the hostile corpus: every NAME.wat with wat2wasm into
// NAME.wasm, and every line of bombs.txt into bomb_NAME.wasm. Run it with
// `go generate ./host/` (or `go run gen.go DIR`). The suite checks that the
// checked-in .wasm files match what this produces.
package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	wats, err := filepath.Glob(filepath.Join(dir, "*.wat"))
	if err != nil {
		return err
	}
	for _, wat := range wats {
		out := strings.TrimSuffix(wat, ".wat") + ".wasm"
		if b, err := exec.Command("wat2wasm", wat, "-o", out).CombinedOutput(); err != nil {
			return fmt.Errorf("wat2wasm %s: %v\n%s", wat, err, b)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "bombs.txt"))
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		body, err := hex.DecodeString(strings.Join(fields[1:], ""))
		if err != nil {
			return fmt.Errorf("bombs.txt: %s: %v", fields[0], err)
		}
		wasm := append([]byte("\x00asm\x01\x00\x00\x00"), body...)
		if err := os.WriteFile(filepath.Join(dir, "bomb_"+fields[0]+".wasm"), wasm, 0o644); err != nil {
			return err
		}
	}
	return sc.Err()
}
