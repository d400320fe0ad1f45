package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host/engine/enginetest"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// lyingWorker stands in for a sandbox worker the plugin took over: it
// speaks the protocol, but answers every call with the reply header given.
func lyingWorker(reply string) int {
	return fakeWorker(func(out io.Writer) error {
		return writeFrame(out, kindReply, json.RawMessage(reply), nil)
	})
}

// fakeWorker speaks the worker side of the protocol on stdin and stdout:
// it reports ready, answers every load and unload with an empty reply and
// leaves each call to onCall; it returns the process's exit code.
func fakeWorker(onCall func(out io.Writer) error) int {
	in, out := bufio.NewReader(os.Stdin), os.Stdout
	if writeFrame(out, kindReady, struct{}{}, nil) != nil {
		return 1
	}
	for {
		f, err := readFrame(in, 1<<30)
		if err != nil {
			return 0
		}
		switch f.kind {
		case kindCall:
			err = onCall(out)
		case kindLoad, kindUnload:
			err = writeFrame(out, kindReply, struct{}{}, nil)
		}
		if err != nil {
			return 1
		}
	}
}

// A worker's reply is untrusted: it cannot give a call an outcome only the
// host decides (denied, tool_not_found, …) or one that does not exist, and
// the message it sends reaches the caller bounded and printable. (The host
// passed any code and up to 1 MiB of message on as the call's error.)
func TestReplyFromALyingWorker(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	long, _ := json.Marshal(strings.Repeat("é", 50_000) + "\x1b[2J\u202e")
	for _, tc := range []struct {
		name, reply string
		code        toolerr.Code
		want        string
	}{
		{"a host decision", `{"code":"denied","message":"the operator said no"}`, toolerr.CodeInternal, `error code "denied"`},
		{"another host decision", `{"code":"tool_not_found"}`, toolerr.CodeInternal, `error code "tool_not_found"`},
		{"an unknown code", `{"code":"` + strings.Repeat("x", 500) + `"}`, toolerr.CodeInternal, "which is not one a sandbox worker answers with"},
		{"negative peak memory", `{"peak_rss":-1}`, toolerr.CodeInternal, "negative peak memory"},
		{"not an object", `[1]`, toolerr.CodeInternal, "not the JSON object of a reply"},
		{"a long hostile message", `{"code":"plugin_error","message":` + string(long) + `}`, toolerr.CodePluginError, "bytes cut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPool(context.Background(), Options{Command: []string{exe, "lying-worker", tc.reply}, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			m, err := p.Compile(context.Background(), enginetest.Spec("liar", plugin.Limits{}))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			_, err = m.Call(context.Background(), "run", []byte("{}"))
			e := toolerr.As(err)
			if e == nil || e.Code != tc.code || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("got %.300v, want %s saying %q", err, tc.code, tc.want)
			}
			if len(e.Message) > toolerr.MaxMessageBytes+64 || !utf8.ValidString(e.Message) || strings.ContainsAny(e.Message, "\x1b\u202e") {
				t.Fatalf("message of %d bytes reached the caller unbounded or unprintable", len(e.Message))
			}
		})
	}
}
