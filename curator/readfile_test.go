package curator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadKeyFileRefusesWithoutReading(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.pub")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pub")
	if err := os.WriteFile(big, make([]byte, maxKeyFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", "/dev/urandom", fifo, big, dir} {
		start := time.Now()
		_, err := ReadKeyFile(path)
		if !errors.Is(err, ErrMalformedKeyFile) {
			t.Errorf("ReadKeyFile(%s) = %v, want ErrMalformedKeyFile", path, err)
		}
		// A FIFO without a writer would block forever in a plain read.
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("ReadKeyFile(%s) took %v", path, d)
		}
	}
}

func TestReadPrivateKeyFileRefusesExposedUnencryptedKey(t *testing.T) {
	cheapScrypt(t)
	dir := t.TempDir()
	_, plain, _, err := WriteKeyPair(dir, "plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, sealed, _, err := WriteKeyPair(dir, "sealed", []byte("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrivateKeyFile(plain); err != nil {
		t.Fatalf("0600 key refused: %v", err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		os.Chmod(plain, mode)
		_, err := ReadPrivateKeyFile(plain)
		if !errors.Is(err, ErrKeyFileExposed) || !strings.Contains(err.Error(), "chmod 600 "+plain) {
			t.Errorf("mode %04o: %v, want ErrKeyFileExposed naming the chmod", mode, err)
		}
		// An encrypted key is protected by its passphrase.
		os.Chmod(sealed, mode)
		if _, err := ReadPrivateKeyFile(sealed); err != nil {
			t.Errorf("encrypted key at mode %04o refused: %v", mode, err)
		}
	}
}

func TestWriteNewLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	if _, _, _, err := WriteKeyPair(dir, "a", nil); err != nil {
		t.Fatal(err)
	}
	WriteKeyPair(dir, "a", nil) // refused: exists
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("files after keygen: %v, want a.key and a.pub", names)
	}
}
