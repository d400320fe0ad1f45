package host_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/govern"
)

// BenchmarkGovernedCall measures one in-process call through the whole
// pipeline with a Governor that has an audit log (its per-call checks:
// the log's refusal, the policy, the plugin still served) and allows the
// call. -benchmem shows what the pipeline allocates per call.
func BenchmarkGovernedCall(b *testing.B) {
	e := newEnv(b, host.Options{})
	e.install(e.bundle(echoManifest("echo", "1.0.0", "", defaultLimits), e.curator("alice", true)))
	l, err := audit.Open(filepath.Join(b.TempDir(), audit.FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	gov, err := govern.New(govern.Options{Store: e.st, ApprovalTimeout: time.Minute, Audit: &audit.Recorder{Log: l}})
	if err != nil {
		b.Fatal(err)
	}
	e.h.SetGovernor(gov)
	ctx, args := context.Background(), []byte(`{"text":"hi"}`)
	if _, err := e.h.Call(ctx, "echo", args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.h.Call(ctx, "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}
