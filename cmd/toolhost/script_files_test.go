package main

import (
	"archive/tar"
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// mkfifo FILE: make a named pipe.
func cmdMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkfifo FILE")
	}
	ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o644))
}

// truncate FILE N: keep the first N bytes of FILE (negative: drop -N
// bytes from the end).
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: truncate FILE N")
	}
	path := ts.MkAbs(args[0])
	fi, err := os.Stat(path)
	ts.Check(err)
	n, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	if n < 0 {
		n += fi.Size()
	}
	ts.Check(os.Truncate(path, n))
}

// keeplines FILE N: keep the first N lines of FILE (cut records from a log).
func cmdKeepLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: keeplines FILE N")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	if n > len(lines) {
		ts.Fatalf("%s has %d lines, fewer than %d", args[0], len(lines), n)
	}
	ts.Check(os.WriteFile(path, bytes.Join(lines[:n], nil), 0o600))
}

// rawbundle OUT MANIFEST MODULE: write an unsigned bundle in the canonical
// layout around any module bytes, as an old toolhost or another tool
// could have made it (plugin.NewBundle refuses a module that is not
// WebAssembly).
func cmdRawBundle(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: rawbundle OUT MANIFEST MODULE")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct{ name, data string }{
		{"manifest.json", ts.ReadFile(args[1])},
		{"module.wasm", ts.ReadFile(args[2])},
		{"signatures.json", "{\"signatures\": []}\n"},
	} {
		ts.Check(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.data)),
			ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}))
		_, err := tw.Write([]byte(e.data))
		ts.Check(err)
	}
	ts.Check(tw.Close())
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), buf.Bytes(), 0o644))
}
