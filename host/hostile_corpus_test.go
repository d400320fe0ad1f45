package host_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bomb is one line of testdata/hostile/bombs.txt.
type bomb struct {
	name string
	wasm []byte
}

func readBombs(t testing.TB) []bomb {
	data, err := os.ReadFile(filepath.Join(corpusDir, "bombs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []bomb
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		body, err := hex.DecodeString(strings.Join(fields[1:], ""))
		if err != nil {
			t.Fatalf("bombs.txt: %s: %v", fields[0], err)
		}
		out = append(out, bomb{name: fields[0], wasm: append([]byte("\x00asm\x01\x00\x00\x00"), body...)})
	}
	return out
}

// bombNames lists the decoder bombs; TestHostileCorpusFresh checks that
// bomb_NAME.wasm holds what bombs.txt says.
func bombNames() []string {
	data, err := os.ReadFile(filepath.Join(corpusDir, "bombs.txt"))
	if err != nil {
		return nil
	}
	var names []string
	for line := range strings.SplitSeq(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) >= 2 {
			names = append(names, f[0])
		}
	}
	return names
}

// TestHostileCorpusFresh checks that every checked-in .wasm of the hostile
// corpus is what its source builds to (run `go generate ./host/` after
// editing a .wat or bombs.txt). The .wat half needs wat2wasm on PATH.
func TestHostileCorpusFresh(t *testing.T) {
	for _, b := range readBombs(t) {
		got, err := os.ReadFile(filepath.Join(corpusDir, "bomb_"+b.name+".wasm"))
		if err != nil || !bytes.Equal(got, b.wasm) {
			t.Errorf("bomb_%s.wasm does not match bombs.txt (%v); run go generate ./host/", b.name, err)
		}
	}
	wats, err := filepath.Glob(filepath.Join(corpusDir, "*.wat"))
	if err != nil || len(wats) == 0 {
		t.Fatalf("no .wat files in %s: %v", corpusDir, err)
	}
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm is not on PATH (install wabt); the .wasm files of the corpus are not checked against their .wat sources")
	}
	tmp := t.TempDir()
	for _, wat := range wats {
		name := strings.TrimSuffix(filepath.Base(wat), ".wat")
		fresh := filepath.Join(tmp, name+".wasm")
		if out, err := exec.Command("wat2wasm", wat, "-o", fresh).CombinedOutput(); err != nil {
			t.Errorf("wat2wasm %s: %v\n%s", wat, err, out)
			continue
		}
		want, _ := os.ReadFile(fresh)
		got, err := os.ReadFile(filepath.Join(corpusDir, name+".wasm"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s.wasm is not what %s.wat builds to (%v); run go generate ./host/", name, name, err)
		}
	}
}
