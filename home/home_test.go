package home_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/home"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/store"
)

// cliHome prepares a home with the real CLI, as an operator would: alice
// trusted, the notes plugin signed by her and installed, add_note denied
// by policy; delete_note (needs_approval) asks by default.
func cliHome(t *testing.T) (dir string, toolhost func(args ...string) string) {
	t.Helper()
	bin := testplugins.Toolhost(t)
	work := t.TempDir()
	dir = filepath.Join(work, "home")
	toolhost = func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--home", dir}, args...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "TOOLHOST_PASSPHRASE=", "TOOLHOST_HOME=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("toolhost %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	toolhost("curator", "keygen", "alice", "--no-passphrase", "--out", "keys")
	toolhost("plugin", "pack", testplugins.Dir(t, "notes"), "-o", "notes.plugin")
	toolhost("curator", "sign", "--key", "keys/alice.key", "notes.plugin")
	toolhost("trust", "add", "keys/alice.pub")
	toolhost("plugin", "install", "notes.plugin")
	toolhost("policy", "set", "add_note", "deny")
	return dir, toolhost
}

// open opens dir as a Go program does, its sandbox workers the toolhost
// executable. (Not this test binary: under -race its workers load the Go
// guest too slowly for the tool's signed deadline on a busy machine;
// TestRunWorkerHook covers a program that is its own worker.)
func open(t *testing.T, dir string, opts home.Options) *home.Home {
	t.Helper()
	opts.WorkerExecutable = testplugins.Toolhost(t)
	hm, err := home.Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("home.Open: %v", err)
	}
	return hm
}

func wantCode(t *testing.T, err error, code toolerr.Code, in string) {
	t.Helper()
	if toolerr.CodeOf(err) != code || !strings.Contains(err.Error(), in) {
		t.Fatalf("error %v, want %s saying %q", err, code, in)
	}
}

// A Go program that opens a home the CLI manages gets its whole pipeline:
// the policy's deny, an ask that waits for the operator's decision made
// with the CLI over the control socket, and a durable audit record of
// every call with entry go, in a log `toolhost audit verify` accepts.
func TestOpenGovernsAndAuditsCalls(t *testing.T) {
	dir, toolhost := cliHome(t)
	ctx := context.Background()
	calls := 0

	// Without the control socket nobody can decide an ask: refused at once,
	// saying how to open the home so that it can be.
	hm := open(t, dir, home.Options{})
	if len(hm.Tools()) != 3 {
		t.Fatalf("tools %v, want the notes plugin's 3", hm.Tools())
	}
	if _, err := hm.Call(ctx, "list_notes", []byte(`{}`)); err != nil {
		t.Fatalf("list_notes: %v", err)
	}
	_, err := hm.Call(ctx, "add_note", []byte(`{"text":"x"}`))
	wantCode(t, err, toolerr.CodeDenied, "add_note")
	_, err = hm.Call(ctx, "delete_note", []byte(`{"id":"1"}`))
	wantCode(t, err, toolerr.CodeDenied, "home.Options.ServeControl")
	calls += 3
	if err := hm.Close(); err != nil {
		t.Fatal(err)
	}

	hm = open(t, dir, home.Options{ServeControl: true})
	for _, decision := range []string{"approve", "deny"} {
		done := make(chan error, 1)
		go func() { _, err := hm.Call(ctx, "delete_note", []byte(`{"id":"1"}`)); done <- err }()
		var id string
		for id == "" {
			select {
			case err := <-done:
				t.Fatalf("delete_note answered %v before anyone decided", err)
			default:
			}
			if p := hm.Governor().Approvals().List(); len(p) > 0 {
				id = p[0].ID
			} else {
				time.Sleep(10 * time.Millisecond) // waiting for a state, not timing it
			}
		}
		toolhost("approvals", decision, id) // the CLI, through this process's control socket
		err := <-done
		if decision == "approve" && err != nil {
			t.Fatalf("approved delete_note: %v", err)
		}
		if decision == "deny" {
			wantCode(t, err, toolerr.CodeDenied, "declined")
		}
		calls++
	}
	_, err = hm.Call(ctx, "add_note", []byte(`{"text":"x"}`))
	wantCode(t, err, toolerr.CodeDenied, "add_note")
	calls++
	if n := goCalls(t, hm); n != 3 {
		t.Errorf("metrics count %d calls with entry go, want 3", n)
	}
	if err := hm.Close(); err != nil {
		t.Fatal(err)
	}

	// Nobody decides: the call is denied at the approval timeout.
	hm = open(t, dir, home.Options{ServeControl: true, ApprovalTimeout: time.Millisecond})
	_, err = hm.Call(ctx, "delete_note", []byte(`{"id":"1"}`))
	wantCode(t, err, toolerr.CodeDenied, "nobody approved delete_note within 1ms")
	calls++
	if err := hm.Close(); err != nil {
		t.Fatal(err)
	}

	if out := toolhost("audit", "verify"); !strings.Contains(out, "intact") {
		t.Fatalf("audit verify: %s", out)
	}
	f, err := os.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seen []string
	for s := bufio.NewScanner(f); s.Scan(); {
		var r struct{ Kind, Entry, Tool, Outcome string }
		if err := json.Unmarshal(s.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == "call" {
			if r.Entry != "go" {
				t.Errorf("call record %s", s.Text())
			}
			seen = append(seen, r.Tool+" "+r.Outcome)
		}
	}
	if len(seen) != calls {
		t.Fatalf("audit holds %d call records %v, want %d", len(seen), seen, calls)
	}
	t.Logf("call records: %v", seen)
}

// Open refuses what the CLI refuses, saying what to do: a home others can
// write, a home another process holds, and no worker program.
func TestOpenRefuses(t *testing.T) {
	dir, _ := cliHome(t)
	exe, _ := os.Executable()
	hm := open(t, dir, home.Options{})
	_, err := home.Open(context.Background(), dir, home.Options{WorkerExecutable: exe})
	if !errors.Is(err, store.ErrLocked) {
		t.Errorf("a held home: %v, want store.ErrLocked", err)
	}
	hm.Close()
	_, err = home.Open(context.Background(), dir, home.Options{})
	if err == nil || !strings.Contains(err.Error(), "WorkerExecutable") {
		t.Errorf("no worker program: %v", err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "store")} {
		if err := os.Chmod(d, 0o770); err != nil {
			t.Fatal(err)
		}
		_, err = home.Open(context.Background(), dir, home.Options{WorkerExecutable: exe})
		if !errors.Is(err, home.ErrNotPrivate) || !strings.Contains(err.Error(), "chmod go-w") {
			t.Errorf("%s group-writable: %v, want ErrNotPrivate", d, err)
		}
		os.Chmod(d, 0o700)
	}
}

// goCalls sums toolhost_tool_calls_total{entry="go"} of hm's metrics.
func goCalls(t *testing.T, hm *home.Home) (n int) {
	t.Helper()
	families, err := hm.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "toolhost_tool_calls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "entry" && l.GetValue() == "go" {
					n += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return n
}

// A program whose main calls home.RunWorker first can be its own sandbox
// worker: Open starts the pool's workers from it (each answers the
// supervisor's handshake from RunWorker, or Open fails), and the home
// lists the installed tools and closes.
func TestRunWorkerHook(t *testing.T) {
	dir, _ := cliHome(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hm, err := home.Open(context.Background(), dir, home.Options{WorkerExecutable: exe})
	if err != nil {
		t.Fatalf("home.Open with this program as its worker: %v", err)
	}
	if len(hm.Tools()) != 3 {
		t.Errorf("tools %v, want the notes plugin's 3", hm.Tools())
	}
	if err := hm.Close(); err != nil {
		t.Fatal(err)
	}
}

// gate is an observer that holds the first call it sees until released.
type gate struct {
	once             sync.Once
	entered, release chan struct{}
}

func (g *gate) ObserveCall(context.Context, host.CallRecord) {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
}

// A call that has left its sandbox but not yet written its audit record
// when Close begins keeps its answer: Close waits for it before closing
// the log, instead of closing the log under it (its answer would be
// withheld: no answer leaves without its record).
func TestCloseWaitsForCallsWritingTheirRecords(t *testing.T) {
	dir, _ := cliHome(t)
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	hm := open(t, dir, home.Options{Observers: []host.CallObserver{g}})
	type result struct {
		res []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := hm.Call(context.Background(), "list_notes", []byte(`{}`))
		done <- result{res, err}
	}()
	<-g.entered // the call is past its sandbox, before its audit record
	closed := make(chan error, 1)
	go func() { closed <- hm.Close() }()
	time.Sleep(200 * time.Millisecond) // Close, unfixed, closes the log meanwhile
	close(g.release)
	r := <-done
	if r.err != nil {
		t.Fatalf("a call writing its record as Close began: %v", r.err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
