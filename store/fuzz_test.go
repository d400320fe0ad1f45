package store_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/store"
)

// damageAndRead damages one file of a copy of p's store (xor at offset,
// then truncation to cut bytes, when cut >= 0), opens it and reads
// everything. It fails the test if a read returns wrong data; an error is
// the right answer to damage, and a panic fails the test by itself.
func damageAndRead(t testing.TB, p populated, file string, offset int, xor byte, cut int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	copyStore(t, p.dir, dir)
	path := filepath.Join(dir, file)
	if file == "key" || file == "seal" {
		path = dir + "." + file
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 {
		data[offset%len(data)] ^= xor
	}
	if cut >= 0 && cut < len(data) {
		data = data[:cut]
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir, nil)
	if err != nil {
		return
	}
	defer st.Close()
	if ts, err := st.TrustSet(); err == nil {
		if _, revoked := ts.Revoked[p.mallet]; !revoked {
			t.Fatalf("%s damaged at %d (xor %#x, cut %d): the revocation is gone without an error", file, offset, xor, cut)
		}
		if _, ok := ts.Keys[p.alice]; !ok || len(ts.Keys) != 2 || ts.Threshold != 1 {
			t.Fatalf("%s damaged at %d (xor %#x, cut %d): trust set changed without an error: %+v", file, offset, xor, cut, ts)
		}
	}
	if rules, err := st.PolicyRules(); err == nil && (len(rules) != 1 || rules[0].Action != store.PolicyDeny) {
		t.Fatalf("%s damaged at %d (xor %#x, cut %d): policy rules %+v without an error", file, offset, xor, cut, rules)
	}
	if hw, ok, err := st.HighWater("a"); err == nil && (!ok || hw.Version != "1.2.0") {
		t.Fatalf("%s damaged at %d (xor %#x, cut %d): high-water mark %q %v without an error", file, offset, xor, cut, hw, ok)
	}
	if rec, err := st.Plugin("a"); err == nil {
		if blob, err := st.Blob(rec.WasmSHA256); err == nil && !bytes.Equal(blob, p.wasm) {
			t.Fatalf("%s damaged: wrong wasm without an error", file)
		}
	}
}

// FuzzStoreFiles flips and truncates bytes of a real store's files.
func FuzzStoreFiles(f *testing.F) {
	f.Add(uint8(0), uint32(0), byte(1), int32(-1))
	f.Add(uint8(1), uint32(100), byte(0x80), int32(-1))
	f.Add(uint8(2), uint32(7), byte(0), int32(10))
	f.Add(uint8(3), uint32(0), byte(0), int32(0))
	p := populate(f)
	files := append(storeFiles(f, p.dir), "key", "seal")
	f.Fuzz(func(t *testing.T, file uint8, offset uint32, xor byte, cut int32) {
		damageAndRead(t, p, files[int(file)%len(files)], int(offset), xor, int(cut))
	})
}

// TestDamagedStoreFiles sweeps every file of a store: bytes flipped across
// the file, and truncations.
func TestDamagedStoreFiles(t *testing.T) {
	p := populate(t)
	files := append(storeFiles(t, p.dir), "key", "seal")
	n := 0
	for _, file := range files {
		size := 64
		if fi, err := os.Stat(filepath.Join(p.dir, file)); err == nil {
			size = int(fi.Size())
		}
		step := max(size/24, 1)
		for off := 0; off < size; off += step {
			damageAndRead(t, p, file, off, 0xff, -1)
			n++
		}
		for _, cut := range []int{0, 1, size / 3, size / 2, size - 1} {
			damageAndRead(t, p, file, 0, 0, cut)
			n++
		}
	}
	t.Logf("%d damaged stores from files %v", n, files)
}
