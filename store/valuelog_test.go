package store_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/store"
)

// TestDamagedValueLogEntryHeaderClosesTheStore damages, one byte at a
// time, the header and key of a value that badger keeps in its value log
// (a wasm module above its 1 MiB value threshold). badger's value read
// answered a header whose lengths no longer fit with an error but kept
// the log file's read lock, so Close waited for it forever: `toolhost
// plugin list` printed its table and never exited, holding the store's
// lock. Every damaged byte must now read as damage (or as the right
// bytes) and the store must close.
func TestDamagedValueLogEntryHeaderClosesTheStore(t *testing.T) {
	src := filepath.Join(t.TempDir(), "store")
	wasm := append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte("big module "), 150_000)...)
	rec := record("big", "1.0.0", wasm)
	st, err := store.Open(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutPlugin(rec, wasm, store.HighWaterMark{Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Open once more: badger starts a new log file, so the one holding the
	// value is no longer the last, which Open would cut at the damage.
	if st, err = store.Open(src, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	vlog, entry := valueLogEntry(t, src, []byte("blob/"+rec.WasmSHA256))
	// The entry's header (meta, varint lengths, expiry) lies before its
	// key; the key's first bytes follow.
	opened := 0
	for off := max(entry-16, 20); off < entry+8; off++ {
		for _, xor := range []byte{0xff, 0x01, 0x80} {
			dir := filepath.Join(t.TempDir(), "store")
			copyStore(t, src, dir)
			path := filepath.Join(dir, vlog)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data[off] ^= xor
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := store.Open(dir, nil)
			if err != nil {
				continue // refused at open: fails closed
			}
			opened++
			if blob, err := st.Blob(rec.WasmSHA256); err == nil && !bytes.Equal(blob, wasm) {
				t.Errorf("%s byte %d ^ %#x: wrong wasm without an error", vlog, off, xor)
			} else if err != nil && !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("%s byte %d ^ %#x: %v, want ErrCorrupt", vlog, off, xor, err)
			}
			closed := make(chan error, 1)
			go func() { closed <- st.Close() }()
			select {
			case <-closed:
			case <-time.After(time.Minute):
				t.Fatalf("%s byte %d ^ %#x: Close has not returned after a minute (a value read kept the log file's lock)", vlog, off, xor)
			}
		}
	}
	if opened == 0 {
		t.Fatal("every damaged store was refused at open: the reads this test is for never ran")
	}
}

// valueLogEntry finds the value log file that holds key and the offset
// of the key in it.
func valueLogEntry(t *testing.T, dir string, key []byte) (string, int) {
	t.Helper()
	for _, name := range storeFiles(t, dir) {
		if filepath.Ext(name) != ".vlog" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(data, key); i >= 0 {
			return name, i
		}
	}
	t.Fatalf("no value log file of %s holds %q: the value was kept in the tree (is it above the value threshold?)", dir, key)
	return "", 0
}
