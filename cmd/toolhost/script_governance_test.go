package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/toolhost/toolhost/api/control"
)

// decidewaiting approve|deny [REASON]: wait (up to 60 s) until a call waits
// for approval in the running toolhost, then decide it with
// `toolhost approvals approve|deny ID [--reason REASON]`.
func cmdDecideWaiting(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || (args[0] != "approve" && args[0] != "deny") {
		ts.Fatalf("usage: decidewaiting approve|deny [REASON]")
	}
	env := func(k string) string { return ts.Getenv(k) }
	toolhost := func(a ...string) (string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--home", env("TOOLHOST_HOME")}, a...), strings.NewReader(""), &out, &errb)
		return out.String() + errb.String(), code
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, code := toolhost("approvals", "list", "--json")
		var pending []struct {
			ID string `json:"id"`
		}
		if code == 0 && json.Unmarshal([]byte(out), &pending) == nil && len(pending) > 0 {
			a := []string{"approvals", args[0], pending[0].ID}
			if len(args) > 1 {
				a = append(a, "--reason", strings.Join(args[1:], " "))
			}
			out, code := toolhost(a...)
			if code != 0 {
				ts.Fatalf("approvals %s: exit %d: %s", args[0], code, out)
			}
			ts.Logf("%s", out)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("no call waited for approval within 60 s")
}

// waitserving: wait (up to 60 s) until a toolhost serves this home's
// control socket.
func cmdWaitServing(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: waitserving")
	}
	sock := filepath.Join(ts.Getenv("TOOLHOST_HOME"), control.SocketName)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := control.Dial(context.Background(), sock); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("nothing serves %s after 60 s", sock)
}
