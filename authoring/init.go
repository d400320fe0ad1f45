package authoring

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

//go:embed templates
var templates embed.FS

// Languages a plugin can be written in.
const (
	LangGo             = "go"
	LangAssemblyScript = "assemblyscript"
)

// ErrExists means Init would overwrite files.
var ErrExists = errors.New("authoring: directory is not empty")

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// ValidInit checks Init's name and language, as Init does, so that a
// caller can tell a bad argument from a failure to write.
func ValidInit(name, lang string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("authoring: plugin name %q must match %s (lowercase letter, then up to 63 of a-z 0-9 _ -)", name, nameRE)
	}
	if lang != LangGo && lang != LangAssemblyScript {
		return fmt.Errorf("authoring: unknown language %q: use %s or %s", lang, LangGo, LangAssemblyScript)
	}
	return nil
}

// Init writes a new plugin directory for NAME in lang at dir, which must
// not exist or be empty. It returns the files written, relative to dir.
func Init(dir, name, lang string) ([]string, error) {
	if err := ValidInit(name, lang); err != nil {
		return nil, err
	}
	if err := checkInitDir(dir); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	root := "templates/" + lang
	err := fs.WalkDir(templates, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".tmpl")
		files[rel], err = render(p, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	if files[".gitignore"], err = render("templates/gitignore.tmpl", name); err != nil {
		return nil, err
	}
	var written []string
	for rel, data := range files {
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return written, fmt.Errorf("authoring: cannot create the plugin directory %s: %w", dir, err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return written, fmt.Errorf("authoring: cannot write the plugin in %s: %w", dir, err)
		}
		written = append(written, rel)
	}
	slices.Sort(written)
	return written, nil
}

// checkInitDir refuses a dir Init cannot write a plugin into, saying why:
// a file, a link to nothing, or a directory that holds anything.
func checkInitDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if target, lerr := os.Readlink(dir); lerr == nil {
			return fmt.Errorf("authoring: %s is a link to %s, which does not exist; create that directory or choose another with --dir", dir, target)
		}
		return nil
	case err != nil:
		return fmt.Errorf("authoring: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("authoring: %s is a file, not a directory; choose a new directory with --dir", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("authoring: %w", err)
	}
	if n := len(entries); n > 0 {
		what := fmt.Sprintf("%d entries", n)
		if n == 1 {
			what = "1 entry (" + entries[0].Name() + ")"
		}
		return fmt.Errorf("%w: %s already holds %s; choose a new directory with --dir", ErrExists, dir, what)
	}
	return nil
}

func render(path, name string) ([]byte, error) {
	src, err := templates.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := template.New(path).Delims("{{", "}}").Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("authoring: template %s: %w", path, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, struct{ Name string }{name}); err != nil {
		return nil, fmt.Errorf("authoring: template %s: %w", path, err)
	}
	return buf.Bytes(), nil
}
