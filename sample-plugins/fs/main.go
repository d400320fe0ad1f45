// Command fs is a toolhost sample plugin: read files and list directories
// under the one directory its manifest grants.
//
// The grant in plugin.json maps a host directory to the guest path /data; the
// host mounts it read-only, and every path it opens is resolved inside that
// directory (os.Root on the host: no escape through ".." or symbolic links).
// The plugin checks paths itself as well, so that a model gets a clear
// message ("outside the granted directory") instead of a bare "not found".
//
// Built as a WASI reactor (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared);
// each tool is a //go:wasmexport function that reads its arguments (a JSON
// object) as the Extism input and writes a JSON object as the Extism output.
package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/extism/go-pdk"

	"github.com/toolhost/toolhost/sample-plugins/internal/guest"
)

// mount is the guest path of the grant in plugin.json. WASI gives a guest no
// portable way to list its preopened directories, so the two must agree.
const mount = "/data"

// Output caps: a model's context is the real limit. max_output_bytes in
// plugin.json leaves room for JSON escaping of the worst case.
const (
	maxContentBytes = 256 << 10
	maxEntries      = 1000
	maxPathLen      = 1024
)

type pathArgs struct {
	Path *string `json:"path"`
}

type fileResult struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Content   string `json:"content"`
	Encoding  string `json:"encoding"` // "utf-8" or "base64" (bytes that are not UTF-8 text)
	Truncated bool   `json:"truncated"`
}

type entry struct {
	Name string `json:"name"`
	Type string `json:"type"` // file, dir, symlink or other
	Size int64  `json:"size"`
}

type listResult struct {
	Path      string  `json:"path"`
	Entries   []entry `json:"entries"`
	Truncated bool    `json:"truncated"`
}

//go:wasmexport read_file
func readFile() int32 {
	p, err := pathArg()
	if err != nil {
		return guest.Fail(err)
	}
	f, err := os.Open(p)
	if err != nil {
		return guest.Fail(describe(p, err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return guest.Fail(describe(p, err))
	}
	if fi.IsDir() {
		return guest.Fail(fmt.Errorf("%s is a directory: use list_directory to see what it holds", p))
	}
	if !fi.Mode().IsRegular() {
		return guest.Fail(fmt.Errorf("%s is not a regular file", p))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxContentBytes+1))
	if err != nil {
		return guest.Fail(describe(p, err))
	}
	res := fileResult{Path: p, Size: max(fi.Size(), int64(len(data))), Encoding: "utf-8"}
	if len(data) > maxContentBytes {
		data, res.Truncated = data[:maxContentBytes], true
		// Do not let the cut split the last UTF-8 sequence of a text file.
		for i := 0; i < utf8.UTFMax-1 && len(data) > 0 && !utf8.Valid(data); i++ {
			data = data[:len(data)-1]
		}
	}
	if utf8.Valid(data) {
		res.Content = string(data)
	} else {
		res.Content, res.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return guest.Succeed(res)
}

//go:wasmexport list_directory
func listDirectory() int32 {
	p, err := pathArg()
	if err != nil {
		return guest.Fail(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return guest.Fail(describe(p, err))
	}
	if !fi.IsDir() {
		return guest.Fail(fmt.Errorf("%s is not a directory: use read_file to read it", p))
	}
	des, err := os.ReadDir(p)
	if err != nil {
		return guest.Fail(describe(p, err))
	}
	res := listResult{Path: p, Entries: []entry{}}
	total := float64(min(len(des), maxEntries))
	for i, de := range des {
		if len(res.Entries) == maxEntries {
			res.Truncated = true
			break
		}
		// A large directory takes a while (a stat per file): a caller
		// that asked for progress hears it entry by entry.
		guest.Progress(float64(i), total, de.Name())
		e := entry{Name: de.Name(), Type: "other"}
		switch t := de.Type(); {
		case t&fs.ModeSymlink != 0:
			e.Type = "symlink" // its target may be outside the grant: not followed here
		case t.IsDir():
			e.Type = "dir"
		case t.IsRegular():
			e.Type = "file"
			if info, err := de.Info(); err == nil {
				e.Size = info.Size()
			}
		}
		res.Entries = append(res.Entries, e)
	}
	guest.Progress(total, total, "listed")
	return guest.Succeed(res)
}

// pathArg reads {"path": ...} and resolves it to a guest path under mount.
// Relative paths are relative to the granted directory.
func pathArg() (string, error) {
	var args pathArgs
	if err := guest.DecodeArgs(pdk.Input(), &args); err != nil {
		return "", err
	}
	if args.Path == nil || *args.Path == "" {
		return "", errors.New(`missing required argument "path": a path relative to the granted directory, such as notes/todo.txt, or an absolute path under ` + mount)
	}
	p := *args.Path
	if len(p) > maxPathLen || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("invalid path %q", guest.Clip(p))
	}
	if path.IsAbs(p) {
		p = path.Clean(p)
	} else {
		p = path.Join(mount, p)
	}
	if p != mount && !strings.HasPrefix(p, mount+"/") {
		return "", fmt.Errorf("%q is outside the granted directory: this plugin can only read under %s", guest.Clip(*args.Path), mount)
	}
	return p, nil
}

// describe turns a file system error into a message a model can act on.
func describe(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s not found", p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("access to %s is refused: it resolves outside the granted directory (for example through a symbolic link) or is not readable", p)
	default:
		return fmt.Errorf("cannot read %s: %v", p, err)
	}
}

func main() {}
