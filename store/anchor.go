package store

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// The seal inside badger proves the security state was written by toolhost,
// but not that it is the latest state: badger drops the tail of a damaged
// write-ahead log on replay, which would silently undo the last revocation
// together with its seal. So the seal of the latest committed state is also
// kept outside badger, in DIR.seal (the anchor), and Open refuses a store
// whose seal is not the anchored one.
//
// A write anchors both the current and the next seal before it commits and
// only the next one after, so a crash at any point leaves an anchor that
// accepts what badger holds, and a state that was acknowledged can never be
// rolled back unnoticed.

const anchorHeader = "toolhost-store-seal-v1\n"

// readAnchor returns the seals the anchor accepts.
func readAnchor(path string) ([][]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(data, []byte(anchorHeader))
	if !ok {
		return nil, fmt.Errorf("%s is damaged", filepath.Base(path))
	}
	var seals [][]byte
	for _, line := range bytes.Fields(rest) {
		b, err := hex.DecodeString(string(line))
		if err != nil {
			return nil, fmt.Errorf("%s is damaged", filepath.Base(path))
		}
		seals = append(seals, b)
	}
	return seals, nil
}

// writeAnchor replaces the anchor atomically.
func (s *Store) writeAnchor(seals ...[]byte) error {
	var b bytes.Buffer
	b.WriteString(anchorHeader)
	for _, seal := range seals {
		if seal != nil {
			b.WriteString(hex.EncodeToString(seal) + "\n")
		}
	}
	tmp := s.anchorPath() + ".tmp"
	if err := writeFileSynced(tmp, b.Bytes()); err != nil {
		return fmt.Errorf("store: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, s.anchorPath()); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return syncDir(filepath.Dir(tmp))
}

func (s *Store) anchorPath() string { return s.dir + ".seal" }

// checkAnchor verifies that the store's seal is the anchored one and
// anchors it alone.
func (s *Store) checkAnchor() error {
	seal, err := s.currentSeal()
	if err != nil {
		return err
	}
	seals, err := readAnchor(s.anchorPath())
	if errors.Is(err, os.ErrNotExist) {
		return tamperedf(s.keyPath, "%s is missing", filepath.Base(s.anchorPath()))
	}
	if err != nil {
		return tamperedf(s.keyPath, "%v", err)
	}
	for _, a := range seals {
		if bytes.Equal(a, seal) {
			if len(seals) == 1 {
				return nil
			}
			return s.writeAnchor(seal)
		}
	}
	return tamperedf(s.keyPath, "it is not the latest state toolhost wrote (%s): the store lost writes or was replaced by an older copy", filepath.Base(s.anchorPath()))
}
