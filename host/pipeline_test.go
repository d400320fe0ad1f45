package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// recorder is a CallObserver keeping every record.
type recorder struct {
	mu   sync.Mutex
	recs []host.CallRecord
}

func (r *recorder) ObserveCall(_ context.Context, rec host.CallRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *recorder) all() []host.CallRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]host.CallRecord(nil), r.recs...)
}

func (r *recorder) last(t *testing.T) host.CallRecord {
	t.Helper()
	all := r.all()
	if len(all) == 0 {
		t.Fatal("no call was recorded")
	}
	return all[len(all)-1]
}

// Every call, failed or not, reaches every observer once, with what the
// pipeline knew.
func TestCallRecords(t *testing.T) {
	rec := &recorder{}
	r := newRig(t, rigOptions{host: host.Options{Observers: []host.CallObserver{rec}}})
	r.installEcho()
	args := `{"a":1}`
	ctx := host.WithEntry(context.Background(), host.EntryCLI)
	if _, err := r.host.Call(ctx, "echo_echo", []byte(args)); err != nil {
		t.Fatal(err)
	}
	got := rec.last(t)
	sum := sha256.Sum256([]byte(args))
	info, _ := r.host.Plugin("echo")
	if got.Entry != host.EntryCLI || got.Tool != "echo_echo" || got.Plugin != "echo" || !got.Digest.Equal(info.Digest) ||
		got.ArgumentsSHA256 != hex.EncodeToString(sum[:]) || string(got.Arguments) != args || got.Outcome != "" ||
		got.Duration <= 0 || got.Queued > got.Duration || got.Start.IsZero() {
		t.Fatalf("record %+v", got)
	}
	if _, err := r.host.Call(context.Background(), "nope", nil); toolerr.CodeOf(err) != toolerr.CodeToolNotFound {
		t.Fatal(err)
	}
	if got := rec.last(t); got.Entry != host.EntryGo || got.Plugin != "" || got.Outcome != toolerr.CodeToolNotFound || got.Message == "" {
		t.Fatalf("unknown tool record %+v", got)
	}
	// A name no tool can have (over 64 bytes) is recorded by its start and
	// end: the caller chose it, and it would otherwise fill the audit log.
	long := "x" + strings.Repeat("é", 30_000) + "end"
	if _, err := r.host.Call(context.Background(), long, nil); toolerr.CodeOf(err) != toolerr.CodeToolNotFound || len(err.Error()) > 2200 {
		t.Fatalf("a 60 KB name: %.200v (%d bytes)", err, len(err.Error()))
	}
	if got := rec.last(t); len(got.Tool) > 200 || !strings.HasPrefix(got.Tool, "xé") || !strings.Contains(got.Tool, "end (60004 bytes)") || !utf8.ValidString(got.Tool) {
		t.Fatalf("a 60 KB name is recorded as %q", got.Tool)
	}
	if n := len(rec.all()); n != 3 {
		t.Fatalf("%d records for 3 calls", n)
	}
}

// Hostile arguments are refused before any validation work, at once: an
// array of 400 × 1e999999 kept the host busy ~12 s when the schema
// validator built each as an exact rational.
func TestHostileArgumentsRefusedFast(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.mustInstall(pluginDef{name: "echo", wasm: corpus(t, "echo"), exports: []string{"echo"},
		limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 2000, MaxOutputBytes: 1 << 20},
		params: `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"number","multipleOf":0.5}}}}`})
	for name, args := range map[string]string{
		"huge exponents": `{"xs":[` + strings.TrimSuffix(strings.Repeat("1e999999,", 400), ",") + `]}`,
		"tiny exponents": `{"xs":[` + strings.TrimSuffix(strings.Repeat("1e-999999,", 400), ",") + `]}`,
		"long literals":  `{"xs":[` + strings.Repeat("9", 5000) + `]}`,
	} {
		start := time.Now()
		_, err := r.host.Call(context.Background(), "echo_echo", []byte(args))
		d := time.Since(start)
		if toolerr.CodeOf(err) != toolerr.CodeInvalidArguments || !strings.Contains(err.Error(), "$.xs[0]") {
			t.Errorf("%s: %v, want invalid_arguments naming $.xs[0]", name, err)
		}
		t.Logf("%s (%d bytes): refused in %v", name, len(args), d)
		if d > 2*time.Second {
			t.Errorf("%s: refusing took %v", name, d)
		}
	}
	// Numbers a tool can use still pass.
	if _, err := r.host.Call(context.Background(), "echo_echo", []byte(`{"xs":[1.5,-2,1e300]}`)); err != nil {
		t.Errorf("ordinary numbers refused: %v", err)
	}
}

// A schema whose validation cost doubles per level is refused when its
// bundle is read (before install, before any call), at once: a 134-byte
// call against it took ~6 s to validate.
func TestHostileSchemaRefusedAtInstall(t *testing.T) {
	manifest := `{"name":"bomb","version":"1.0.0","description":"d","wasm":"plugin.wasm","tools":[{"name":"t","description":"d",
		"parameters":{"type":"object","properties":{"a":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}}}]}`
	start := time.Now()
	_, err := plugin.NewBundle([]byte(manifest), corpus(t, "echo"))
	d := time.Since(start)
	t.Logf("hostile schema refused in %v", d)
	if err == nil || !strings.Contains(err.Error(), "$ref") {
		t.Fatalf("bundle: %v, want a refusal naming the references", err)
	}
	if d > 2*time.Second {
		t.Fatalf("refusing took %v", d)
	}
}

// Overload is absorbed: 400 calls, 50 at a time, to one tool; at least
// 95 % succeed (they wait for admission and workers instead of an
// instant busy).
func TestOverloadAbsorbed(t *testing.T) {
	r := newRig(t, rigOptions{workers: 2})
	r.installEcho()
	r.echoAnswers(t)
	var ok, next atomic.Int64
	codes := sync.Map{}
	var wg sync.WaitGroup
	start := time.Now()
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= 400 {
				_, err := r.host.Call(context.Background(), "echo_echo", []byte(`{"x":1}`))
				if err == nil {
					ok.Add(1)
				} else {
					n, _ := codes.LoadOrStore(toolerr.CodeOf(err), new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
				}
			}
		}()
	}
	wg.Wait()
	codes.Range(func(k, v any) bool {
		t.Logf("%v × %s", v.(*atomic.Int64).Load(), k)
		return true
	})
	t.Logf("400 calls 50 wide: %d succeeded (%.1f %%) in %v", ok.Load(), float64(ok.Load())/4, time.Since(start).Round(time.Millisecond))
	if ok.Load() < 380 {
		t.Fatalf("%d of 400 calls succeeded, want at least 95 %%", ok.Load())
	}
}

// A call waiting for admission is cancelled at once when its caller
// goes away, and the record says cancelled.
func TestCancelledWhileQueued(t *testing.T) {
	rec := &recorder{}
	r := newRig(t, rigOptions{workers: 2, host: host.Options{MaxInFlight: 1, Observers: []host.CallObserver{rec}}})
	r.mustInstall(pluginDef{name: "loop", wasm: corpus(t, "infinite_loop"), exports: []string{"run"},
		limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 3000, MaxOutputBytes: 1024}})
	go r.host.Call(context.Background(), "loop_run", nil) // holds the one slot
	for r.host.Load().Running != 1 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.host.Call(ctx, "loop_run", nil)
		done <- err
	}()
	for r.host.Load().Queued != 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if toolerr.CodeOf(err) != toolerr.CodeCancelled {
			t.Fatalf("queued call ended with %v, want cancelled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a cancelled queued call did not end within 2s")
	}
	t.Logf("queued call ended %v after its cancellation", time.Since(start))
	var cancelled bool
	for _, rc := range rec.all() {
		cancelled = cancelled || rc.Outcome == toolerr.CodeCancelled
	}
	if !cancelled {
		t.Fatal("no record says cancelled")
	}
}

// The deadline runs from arrival: a call that waits in the queue longer
// than its tool's timeout_ms ends within that deadline (plus margin), not
// a whole timeout after it is admitted.
func TestDeadlineCoversTheQueue(t *testing.T) {
	r := newRig(t, rigOptions{workers: 2, host: host.Options{MaxInFlight: 1}})
	r.mustInstall(pluginDef{name: "loop", wasm: corpus(t, "infinite_loop"), exports: []string{"run"},
		limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 1000, MaxOutputBytes: 1024}})
	go r.host.Call(context.Background(), "loop_run", nil)
	for r.host.Load().Running != 1 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	_, err := r.host.Call(context.Background(), "loop_run", nil)
	d := time.Since(start)
	if c := toolerr.CodeOf(err); c != toolerr.CodeBusy && c != toolerr.CodeTimeout {
		t.Fatalf("queued call: %v, want busy or timeout", err)
	}
	if d > 1000*time.Millisecond+1500*time.Millisecond {
		t.Fatalf("queued call with a 1 s deadline ended after %v", d)
	}
}

// governor is a test Governor: it denies tool "deny", rewrites arguments
// when rewrite is set, and "waits for a person" (sleeps) when wait is set.
type governor struct {
	rewrite json.RawMessage
	wait    time.Duration
	after   func(json.RawMessage) (json.RawMessage, error)
	entered chan struct{}
}

func (g *governor) BeforeCall(ctx context.Context, c *host.CallInfo) (host.Verdict, error) {
	if g.entered != nil {
		g.entered <- struct{}{}
	}
	if g.wait > 0 {
		select {
		case <-time.After(g.wait):
		case <-ctx.Done():
			return host.Verdict{}, toolerr.Errorf(toolerr.CodeCancelled, "the caller left")
		}
		return host.Verdict{Decision: "approved", DecidedBy: "operator", Waited: g.wait, Arguments: g.rewrite}, nil
	}
	return host.Verdict{Decision: "allowed", DecidedBy: "policy", Arguments: g.rewrite}, nil
}

func (g *governor) AfterCall(_ context.Context, _ *host.CallInfo, res json.RawMessage) (json.RawMessage, error) {
	if g.after != nil {
		return g.after(res)
	}
	return res, nil
}

func TestGovernor(t *testing.T) {
	rec := &recorder{}
	r := newRig(t, rigOptions{host: host.Options{Observers: []host.CallObserver{rec}}})
	r.mustInstall(pluginDef{name: "echo", wasm: corpus(t, "echo"), exports: []string{"echo"},
		limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 1000, MaxOutputBytes: 1 << 20},
		params: `{"type":"object","properties":{"n":{"type":"integer"}}}`})

	// Rewritten arguments are what runs, and are validated again.
	r.host.SetGovernor(&governor{rewrite: json.RawMessage(`{"n":2}`)})
	out, err := r.host.Call(context.Background(), "echo_echo", []byte(`{"n":1}`))
	if err != nil || string(out) != `{"n":2}` {
		t.Fatalf("rewrite: %s %v", out, err)
	}
	if got := rec.last(t); got.Decision != "allowed" || got.DecidedBy != "policy" {
		t.Fatalf("record %+v", got)
	}
	r.host.SetGovernor(&governor{rewrite: json.RawMessage(`{"n":"two"}`)})
	if _, err := r.host.Call(context.Background(), "echo_echo", []byte(`{"n":1}`)); toolerr.CodeOf(err) != toolerr.CodeInvalidArguments || !strings.Contains(err.Error(), "rewritten") {
		t.Fatalf("invalid rewrite: %v", err)
	}

	// A wait for a person neither counts against the 1 s deadline nor
	// holds the slot: with MaxInFlight 1 another call runs meanwhile.
	r.host.SetGovernor(&governor{wait: 1500 * time.Millisecond, entered: make(chan struct{}, 1)})
	g := r.host
	done := make(chan error, 1)
	go func() {
		_, err := g.Call(context.Background(), "echo_echo", []byte(`{"n":3}`))
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("a call approved after 1.5 s (deadline 1 s): %v", err)
	}

	// AfterCall may deny the result.
	r.host.SetGovernor(&governor{after: func(json.RawMessage) (json.RawMessage, error) {
		return nil, toolerr.Errorf(toolerr.CodeDenied, "hook:redact said no")
	}})
	if _, err := r.host.Call(context.Background(), "echo_echo", []byte(`{}`)); toolerr.CodeOf(err) != toolerr.CodeDenied {
		t.Fatalf("after-call deny: %v", err)
	}
	if got := rec.last(t); got.Outcome != toolerr.CodeDenied {
		t.Fatalf("record %+v", got)
	}
}

// An approval wait gives its admission slot back.
func TestApprovalWaitHoldsNoSlot(t *testing.T) {
	r := newRig(t, rigOptions{host: host.Options{MaxInFlight: 1}})
	r.installEcho()
	gov := &governor{wait: 3 * time.Second, entered: make(chan struct{}, 1)}
	r.host.SetGovernor(gov)
	go r.host.Call(context.Background(), "echo_echo", []byte(`{}`))
	<-gov.entered
	if l := r.host.Load(); l.Running != 0 {
		t.Fatalf("a call waiting for approval holds a slot: %+v", l)
	}
	r.host.SetGovernor(nil)
	start := time.Now()
	r.echoAnswers(t)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("another call waited %v behind an approval", d)
	}
}
