package main

import (
	"os/exec"
	"testing"
)

// TestShellWordPastesAsOneWord: the `cd DIR` line plugin init prints reads
// back in a real shell as DIR itself, whatever DIR holds.
func TestShellWordPastesAsOneWord(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, dir := range []string{
		"hello", "./plugins/hello-2", "/tmp/a dir/hello", "it's", `a"b`, "$HOME/x", "`id`", "a\\b",
		"tab\there", "new\nline", "*", "~user", "semi;colon", "a&b", "(x)", "é/ü", "-dash", "",
	} {
		out, err := exec.Command(sh, "-c", "printf %s "+shellWord(dir)).Output()
		if err != nil {
			t.Errorf("%q as %s: %v", dir, shellWord(dir), err)
			continue
		}
		if string(out) != dir {
			t.Errorf("%q printed as %s reads back as %q", dir, shellWord(dir), out)
		}
	}
}
