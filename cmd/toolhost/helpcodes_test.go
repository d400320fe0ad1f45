package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHelpListsEveryExitCode: `toolhost --help` names every exit code of
// README's table (the CLI contract keeps README and --help in step). It
// left out 130, so a script writer reading --help did not know that an
// interrupted command (Ctrl-C, SIGTERM; bench cut short) exits 130.
func TestHelpListsEveryExitCode(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "### Exit codes")
	if !ok {
		t.Fatal(`README.md has no "### Exit codes" section`)
	}
	codes := regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(table, -1)
	if len(codes) < 7 {
		t.Fatalf("README's exit code table has %d rows, want at least 7", len(codes))
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("--help exited %d: %s", code, errOut.String())
	}
	_, help, _ := strings.Cut(out.String(), "Exit codes:")
	help, _, _ = strings.Cut(help, "\n\n")
	for _, c := range codes {
		if !regexp.MustCompile(`(^|[\s,])` + c[1] + ` `).MatchString(help) {
			t.Errorf("toolhost --help does not list exit code %s of README's table; its list:%s", c[1], help)
		}
	}
}
