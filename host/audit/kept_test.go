package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const keptWhy = "the home's store /h/store already existed"

// walStates are the write-ahead files a log can have beside it: each
// builds one beside the log at path (whose records, if any, it may use)
// and returns what MissingError says of it.
var walStates = map[string]func(t *testing.T, path string) string{
	"gone": func(t *testing.T, path string) string {
		os.Remove(walPath(path))
		return "audit.jsonl.wal is gone too"
	},
	"checkpoint with records": func(t *testing.T, path string) string {
		return "says toolhost made records through seq 3 durable"
	},
	"checkpoint of an empty log": func(t *testing.T, path string) string {
		empty := filepath.Join(t.TempDir(), FileName)
		l, err := Open(empty)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		copyFile(t, walPath(empty), walPath(path))
		return "says the log held no records"
	},
	"no valid checkpoint": func(t *testing.T, path string) string {
		os.Truncate(walPath(path), 100)
		return "is there but holds no valid checkpoint"
	},
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOpenKeptRefusesAMissingLog: where a log was kept, a missing
// audit.jsonl is ErrLogMissing whatever is left of its write-ahead file,
// saying what was found and how to go on, and neither file is created or
// changed. Open, which cannot know, creates it as before.
func TestOpenKeptRefusesAMissingLog(t *testing.T) {
	for name, state := range walStates {
		t.Run(name, func(t *testing.T) {
			path, _ := writeLog(t, 3)
			found := state(t, path)
			os.Remove(path)
			walBefore, walErr := os.ReadFile(walPath(path))

			l, err := OpenKept(path, keptWhy)
			if !errors.Is(err, ErrLogMissing) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("OpenKept of a deleted log: %v, want ErrLogMissing", err)
			}
			for _, want := range []string{path + " does not exist", keptWhy, found, "restore audit.jsonl and audit.jsonl.wal together from a backup", "create an empty audit.jsonl (touch " + path + ")"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("OpenKept created %s: %v", path, err)
			}
			walAfter, err := os.ReadFile(walPath(path))
			if (walErr == nil) != (err == nil) || !bytes.Equal(walBefore, walAfter) {
				t.Errorf("OpenKept changed the write-ahead file (before: %v, after: %v)", walErr, err)
			}

			l, err = Open(path)
			if errors.Is(err, ErrLogMissing) {
				t.Fatalf("Open: %v", err)
			}
			if l != nil {
				l.Close()
			}
		})
	}
}

// TestOpenKeptRecordsALogBegunEmpty: an empty audit.jsonl without a valid
// write-ahead checkpoint, where a log was kept, is a new log begun by hand:
// it opens, and its first record says so. With a checkpoint of an empty
// log (a home where nothing was recorded yet), or through Open, an empty
// log opens as it always did, with nothing added.
func TestOpenKeptRecordsALogBegunEmpty(t *testing.T) {
	for name, state := range walStates {
		t.Run(name, func(t *testing.T) {
			path, _ := writeLog(t, 3)
			state(t, path)
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := OpenKept(path, keptWhy)
			if name == "checkpoint with records" {
				// The log was cut below what was made durable: refused as
				// before, saying how to begin anew.
				if err == nil || !strings.Contains(err.Error(), "create an empty "+path+" to start a new log") {
					t.Fatalf("OpenKept of an emptied log with its checkpoint: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := bytes.SplitAfter(closeAndRead(t, l, path), []byte("\n"))
			got = got[:len(got)-1]
			if name == "checkpoint of an empty log" {
				if len(got) != 0 {
					t.Fatalf("an empty log with its checkpoint got records:\n%s", bytes.Join(got, nil))
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("log:\n%s", bytes.Join(got, nil))
			}
			r := must(ParseLine(bytes.TrimSuffix(got[0], []byte("\n"))))
			if r.Seq != 1 || r.Action != "audit_unchecked_start" || !strings.Contains(r.Detail, "began empty") || !strings.Contains(r.Detail, keptWhy) {
				t.Fatalf("first record: %+v", r)
			}
			// Once begun, the log is kept like any other: no second note.
			l, err = OpenKept(path, keptWhy)
			if err != nil {
				t.Fatal(err)
			}
			if seq, _ := l.Head(); seq != 1 {
				t.Fatalf("reopened at seq %d, want 1", seq)
			}
			l.Close()
		})
	}
	t.Run("not kept", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if data := closeAndRead(t, l, path); len(data) != 0 {
			t.Fatalf("Open of a new empty log wrote:\n%s", data)
		}
	})
}

// TestCreateLeavesAnythingThereAlone: Create makes an empty private log,
// and never touches a file (or anything else) already at its path.
func TestCreateLeavesAnythingThereAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := Create(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("after Create: %v, %v", st, err)
	}
	path2, lines := writeLog(t, 2)
	if err := Create(path2); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path2); !bytes.Equal(data, bytes.Join(lines, nil)) {
		t.Fatalf("Create changed an existing log:\n%s", data)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "nowhere"), link)
	if err := Create(link); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Create followed a link: %v", err)
	}
}
