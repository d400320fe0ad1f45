package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/enginetest"
	"github.com/toolhost/toolhost/host/toolerr"
)

// fileTree is the granted directory of the file tests, next to a directory
// that is not granted.
type fileTree struct {
	granted string // mounted at /data
	outside string // holds secret.txt; never granted
}

const secret = "the contents of a file outside the grant"

func newFileTree(t *testing.T) fileTree {
	t.Helper()
	base := t.TempDir()
	ft := fileTree{granted: filepath.Join(base, "granted"), outside: filepath.Join(base, "outside")}
	for path, content := range map[string]string{
		"hello.txt":          "hello, world\n",
		"notes/todo.txt":     "- write tests\n",
		"big.txt":            strings.Repeat("x", 300<<10),
		"bin.dat":            "\x00\xff\xfe binary",
		"../outside.txt":     secret, // sibling of the grant: the target of ".."
		"../outside/sec.txt": secret,
	} {
		p := filepath.Join(ft.granted, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(ft.granted, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink that escapes (absolute target outside), one that escapes
	// relatively, and one that stays inside.
	for name, target := range map[string]string{
		"escape":         filepath.Join(ft.outside, "sec.txt"),
		"escape_rel":     "../outside/sec.txt",
		"escape_dir":     ft.outside,
		"notes/todo.lnk": "todo.txt",
	} {
		if err := os.Symlink(target, filepath.Join(ft.granted, name)); err != nil {
			t.Fatal(err)
		}
	}
	return ft
}

// snapshot lists every path under dir with its content (links: target).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		case d.IsDir():
			out[rel] = "dir"
		default:
			data, err := os.ReadFile(p)
			out[rel] = string(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func compileFS(t *testing.T, granted string) engine.Module {
	t.Helper()
	s := loadSample(t, "fs")
	manifest := replaceOnce(t, s.manifest, `"/srv/toolhost-fs-sample"`, `"`+granted+`"`)
	return compileManifest(t, manifest, s.wasm, false)
}

type fileOut struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Content   string `json:"content"`
	Encoding  string `json:"encoding"`
	Truncated bool   `json:"truncated"`
}

type listOut struct {
	Path    string `json:"path"`
	Entries []struct {
		Name string `json:"name"`
		Type string `json:"type"`
		Size int64  `json:"size"`
	} `json:"entries"`
	Truncated bool `json:"truncated"`
}

func TestFSSampleReadsUnderGrant(t *testing.T) {
	t.Parallel() // compiling a Go guest takes seconds: overlap the two samples
	ft := newFileTree(t)
	mod := compileFS(t, ft.granted)
	before := snapshot(t, ft.granted)

	for _, tc := range []struct {
		path string
		want fileOut
	}{
		{"hello.txt", fileOut{Path: "/data/hello.txt", Size: 13, Content: "hello, world\n", Encoding: "utf-8"}},
		{"/data/notes/todo.txt", fileOut{Path: "/data/notes/todo.txt", Size: 14, Content: "- write tests\n", Encoding: "utf-8"}},
		{"notes/../hello.txt", fileOut{Path: "/data/hello.txt", Size: 13, Content: "hello, world\n", Encoding: "utf-8"}},
		{"notes/todo.lnk", fileOut{Path: "/data/notes/todo.lnk", Size: 14, Content: "- write tests\n", Encoding: "utf-8"}},
		{"bin.dat", fileOut{Path: "/data/bin.dat", Size: 10, Content: base64.StdEncoding.EncodeToString([]byte("\x00\xff\xfe binary")), Encoding: "base64"}},
	} {
		t.Run("read "+tc.path, func(t *testing.T) {
			out, e := call(t, mod, "read_file", map[string]string{"path": tc.path})
			if e != nil {
				t.Fatal(e)
			}
			var got fileOut
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	t.Run("read big file", func(t *testing.T) {
		out, e := call(t, mod, "read_file", map[string]string{"path": "big.txt"})
		if e != nil {
			t.Fatal(e)
		}
		var got fileOut
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if !got.Truncated || got.Size != 300<<10 || len(got.Content) != 256<<10 {
			t.Fatalf("truncated=%v size=%d content=%d bytes; want a cut at 256 KiB of 300 KiB", got.Truncated, got.Size, len(got.Content))
		}
	})
	t.Run("list", func(t *testing.T) {
		out, e := call(t, mod, "list_directory", map[string]string{"path": "."})
		if e != nil {
			t.Fatal(e)
		}
		var got listOut
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		types := map[string]string{}
		for _, en := range got.Entries {
			types[en.Name] = en.Type
			if en.Name == "hello.txt" && en.Size != 13 {
				t.Errorf("hello.txt size %d, want 13", en.Size)
			}
		}
		want := map[string]string{
			"hello.txt": "file", "big.txt": "file", "bin.dat": "file", "notes": "dir", "sub": "dir",
			"escape": "symlink", "escape_rel": "symlink", "escape_dir": "symlink",
		}
		if got.Path != "/data" || len(types) != len(want) {
			t.Fatalf("got %s, want entries %v", out, want)
		}
		for name, typ := range want {
			if types[name] != typ {
				t.Errorf("%s: type %q, want %q (listing %s)", name, types[name], typ, out)
			}
		}
	})
	t.Run("list reports progress", func(t *testing.T) {
		// A caller that asked for progress hears it entry by entry (the
		// engine passes at most one report per 50 ms, and the last one).
		sink := &enginetest.Sink{Level: engine.LogOff}
		if _, err := mod.Call(engine.WithEvents(context.Background(), sink), "list_directory", []byte(`{"path":"."}`)); err != nil {
			t.Fatal(err)
		}
		_, progress, _ := sink.Got()
		if len(progress) == 0 {
			t.Fatal("list_directory reported no progress")
		}
		if first, last := progress[0], progress[len(progress)-1]; first.Progress != 0 || first.Total != 8 || last != (engine.Progress{Progress: 8, Total: 8, Message: "listed"}) {
			t.Errorf("progress %+v, want 0/8 first and 8/8 \"listed\" last", progress)
		}
	})
	t.Run("list subdirectory", func(t *testing.T) {
		out, e := call(t, mod, "list_directory", map[string]string{"path": "/data/notes"})
		if e != nil {
			t.Fatal(e)
		}
		if !bytes.Contains(out, []byte(`{"name":"todo.txt","type":"file","size":14}`)) ||
			!bytes.Contains(out, []byte(`{"name":"todo.lnk","type":"symlink","size":0}`)) {
			t.Fatalf("got %s", out)
		}
	})

	for _, tc := range []struct {
		name, export, path string
		code               toolerr.Code
		want               string
	}{
		{"dot-dot", "read_file", "../outside.txt", toolerr.CodePluginError, "outside the granted directory"},
		{"dot-dot deep", "read_file", "notes/../../outside/sec.txt", toolerr.CodePluginError, "outside the granted directory"},
		{"absolute outside", "read_file", "/etc/passwd", toolerr.CodePluginError, "outside the granted directory"},
		{"absolute prefix trick", "read_file", "/database/x", toolerr.CodePluginError, "outside the granted directory"},
		{"list dot-dot", "list_directory", "..", toolerr.CodePluginError, "outside the granted directory"},
		{"symlink escape", "read_file", "escape", toolerr.CodePluginError, "access to /data/escape is refused"},
		{"relative symlink escape", "read_file", "escape_rel", toolerr.CodePluginError, "access to /data/escape_rel is refused"},
		{"symlink escape to a directory", "list_directory", "escape_dir", toolerr.CodePluginError, "access to /data/escape_dir is refused"},
		{"not found", "read_file", "nope.txt", toolerr.CodePluginError, "/data/nope.txt not found"},
		{"read a directory", "read_file", "notes", toolerr.CodePluginError, "is a directory"},
		{"list a file", "list_directory", "hello.txt", toolerr.CodePluginError, "is not a directory"},
		{"missing path", "read_file", "", toolerr.CodePluginError, `missing required argument "path"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustFail(t, mod, tc.export, map[string]string{"path": tc.path}, tc.code, tc.want)
			if strings.Contains(e.Message, secret) {
				t.Fatalf("the secret leaked: %v", e)
			}
		})
	}
	if after := snapshot(t, ft.granted); !maps.Equal(before, after) {
		t.Fatalf("the granted directory changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestFSSampleWithoutGrantedDirectory(t *testing.T) {
	s := loadSample(t, "fs")
	manifest := replaceOnce(t, s.manifest, `"/srv/toolhost-fs-sample"`, `"`+filepath.Join(t.TempDir(), "missing")+`"`)
	_, err := capEngine(t).Compile(t.Context(), specOf(t, manifest, s.wasm))
	var se *toolerr.Error
	if !errors.As(err, &se) || se.Code != toolerr.CodePermissionDenied || !strings.Contains(se.Message, "cannot be opened") {
		t.Fatalf("compile with a missing granted directory: %v, want permission_denied", err)
	}
}

// TestRawWASIFileProbes bypasses the guest's own path handling (Go's
// wasip1 runtime cleans paths before they reach the host) and checks what
// the host itself allows: nothing outside the grant, no write of any kind.
func TestRawWASIFileProbes(t *testing.T) {
	ft := newFileTree(t)
	mod := compileProbe(t, ft.granted)
	before := snapshot(t, filepath.Dir(ft.granted))
	// Each probe returns the WASI errno it got; 0 would mean it worked. Any
	// other errno is safe: the exact values document what a guest sees.
	const (
		ebadf  = 8
		enoent = 44
		enosys = 52
		eperm  = 63
	)
	for _, tc := range []struct {
		export string
		errno  int
	}{
		{"open_dotdot", eperm},
		{"open_dotdot_deep", eperm},
		{"open_absolute", eperm},
		{"open_symlink_escape", eperm},
		{"create_file", enoent}, // O_CREAT: the read-only FS only opens what exists
		{"write_existing", ebadf},
		{"truncate_existing", enosys},
		{"unlink", enosys},
		{"mkdir", enosys},
		{"rename", enosys},
		{"symlink", enosys},
	} {
		t.Run(tc.export, func(t *testing.T) {
			mustFail(t, mod, tc.export, nil, toolerr.CodePluginError, fmt.Sprintf("the tool returned error code %d", tc.errno))
		})
	}
	if after := snapshot(t, filepath.Dir(ft.granted)); !maps.Equal(before, after) {
		t.Fatalf("files changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestGrantFS(t *testing.T) {
	ft := newFileTree(t)
	if err := syscall.Mkfifo(filepath.Join(ft.granted, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := openGrants(map[string]string{ft.granted: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	defer files.close()
	g := grantFS{files.roots[0]}

	for _, tc := range []struct {
		name string
		want error
	}{
		{"hello.txt", nil},
		{"notes/todo.lnk", nil},
		{".", nil},
		{"../outside.txt", fs.ErrInvalid},
		{"/etc/passwd", fs.ErrInvalid},
		{"escape", fs.ErrPermission},
		{"escape_rel", fs.ErrPermission},
		{"escape_dir", fs.ErrPermission},
		{"fifo", fs.ErrPermission}, // opening it would block the host thread
		{"nope", fs.ErrNotExist},
	} {
		f, err := g.Open(tc.name)
		if tc.want == nil {
			if err != nil {
				t.Errorf("Open(%q): %v", tc.name, err)
				continue
			}
			if _, ok := f.(io.Writer); ok {
				t.Errorf("Open(%q) returned a file with a Write method", tc.name)
			}
			if _, ok := f.(io.WriterAt); ok {
				t.Errorf("Open(%q) returned a file with a WriteAt method", tc.name)
			}
			f.Close()
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("Open(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}
}
