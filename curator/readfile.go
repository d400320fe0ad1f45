package curator

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrKeyFileExposed means an unencrypted private key can be read by group
// or others.
var ErrKeyFileExposed = errors.New("curator: the unencrypted private key can be read by other users")

// ReadKeyFile reads a key file, public or private, checking its size before
// reading: only a regular file of at most 8 KiB is read (a device such as
// /dev/zero or a FIFO is refused at once, without reading or waiting).
func ReadKeyFile(path string) ([]byte, error) {
	data, _, err := readKeyFile(path)
	return data, err
}

// ReadPrivateKeyFile reads a private key file like ReadKeyFile, and
// refuses one that is not encrypted and group or others can read, as ssh
// does: such a key may already be in other hands.
func ReadPrivateKeyFile(path string) ([]byte, error) {
	data, mode, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	if mode.Perm()&0o077 != 0 && !IsEncrypted(data) && probeType(data) == privateKeyType {
		return nil, fmt.Errorf("%w: %s has mode %04o; run `chmod 600 %s` (and consider the key compromised if others could read it)", ErrKeyFileExposed, path, mode.Perm(), path)
	}
	return data, nil
}

func readKeyFile(path string) ([]byte, os.FileMode, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%w: %s is not a regular file (%s)", ErrMalformedKeyFile, path, fi.Mode().Type())
	}
	if fi.Size() > maxKeyFileBytes {
		return nil, 0, fmt.Errorf("%w: %s is %d bytes; key files are at most %d", ErrMalformedKeyFile, path, fi.Size(), maxKeyFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("curator: read %s: %w", path, err)
	}
	if len(data) > maxKeyFileBytes {
		return nil, 0, fmt.Errorf("%w: %s grew past %d bytes while being read", ErrMalformedKeyFile, path, maxKeyFileBytes)
	}
	return data, fi.Mode(), nil
}
