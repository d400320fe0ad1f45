package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutputIsSource is wrapped by CheckPackOutput's refusals: the bundle
// would be written over a file of the plugin directory it is packed from.
var ErrOutputIsSource = errors.New("the output would overwrite a source file of the plugin")

// CheckPackOutput refuses an output path for the bundle packed from dir
// (whose manifest is m) that would destroy the plugin's sources: the
// manifest, the module it names (existing or still to be built), or any
// other existing file in dir whose name does not end in .plugin. Paths are
// compared after following symbolic links, and by file identity
// (os.SameFile), so another name for the same file is refused too.
func CheckPackOutput(dir string, m *Manifest, out string) error {
	outDir, outBase, err := resolvedParent(out)
	if err != nil {
		return nil // Replace reports what is wrong with out itself
	}
	outInfo, outErr := os.Stat(out)
	for _, name := range []string{"plugin.json", m.Wasm} {
		src := filepath.Join(dir, name)
		if outErr == nil {
			if fi, err := os.Stat(src); err == nil && os.SameFile(fi, outInfo) {
				return outputIsSource(out, src)
			}
		}
		if errors.Is(outErr, fs.ErrNotExist) && outBase == name && sameDir(outDir, dir) {
			return outputIsSource(out, src)
		}
	}
	if outErr == nil && outInfo.Mode().IsRegular() && !strings.HasSuffix(outBase, ".plugin") && sameDir(outDir, dir) {
		return fmt.Errorf("%w: -o %s is the existing file %s in the plugin directory %s, and its name does not end in .plugin; write the bundle to NAME.plugin, or outside %s",
			ErrOutputIsSource, out, filepath.Join(dir, outBase), dir, dir)
	}
	return nil
}

func outputIsSource(out, src string) error {
	return fmt.Errorf("%w: -o %s is %s, which the bundle is packed from; write the bundle to another file, such as NAME.plugin", ErrOutputIsSource, out, src)
}

// resolvedParent returns the directory path leads into, after following
// a symbolic link at path itself, and the final name there.
func resolvedParent(path string) (string, string, error) {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	return filepath.Dir(path), filepath.Base(path), nil
}

func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
