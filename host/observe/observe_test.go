package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/signing"
)

func record(tool, plugin string, entry host.Entry, outcome toolerr.Code) host.CallRecord {
	return host.CallRecord{
		Start: time.Now(), Duration: 12 * time.Millisecond, Queued: 2 * time.Millisecond,
		Entry: entry, Tool: tool, Plugin: plugin, Digest: signing.Digest{0xab, 0xcd, 0xef, 1, 2, 3},
		Arguments: json.RawMessage(`{"text":"TOPSECRET"}`), Outcome: outcome,
		Message: `at '/text': "TOPSECRET" is too long`,
	}
}

type load struct{ l host.Load }

func (l load) Load() host.Load { return l.l }

func TestMetrics(t *testing.T) {
	m := NewMetrics()
	m.TrackLoad(load{host.Load{Running: 3, Queued: 5}})
	ctx := context.Background()
	m.ObserveCall(ctx, record("echo", "alpha", host.EntryHTTP, ""))
	m.ObserveCall(ctx, record("echo", "alpha", host.EntryCLI, ""))
	m.ObserveCall(ctx, record("echo", "alpha", host.EntryMCPStdio, toolerr.CodeCancelled))
	m.ObserveCall(ctx, record("slow", "alpha", host.EntryMCPHTTP, toolerr.CodeTimeout))
	m.ObserveCall(ctx, record("guess-1", "", host.EntryHTTP, toolerr.CodeToolNotFound))
	m.ObserveCall(ctx, record("guess-2", "", host.EntryHTTP, toolerr.CodeToolNotFound))
	want := `
# HELP toolhost_tool_calls_total Tool calls by tool, entry point (http, mcp-http, mcp-stdio, cli, go) and outcome ("ok" or the error code, "cancelled" included).
# TYPE toolhost_tool_calls_total counter
toolhost_tool_calls_total{entry="cli",outcome="ok",tool="echo"} 1
toolhost_tool_calls_total{entry="http",outcome="ok",tool="echo"} 1
toolhost_tool_calls_total{entry="http",outcome="tool_not_found",tool="_unknown"} 2
toolhost_tool_calls_total{entry="mcp-http",outcome="timeout",tool="slow"} 1
toolhost_tool_calls_total{entry="mcp-stdio",outcome="cancelled",tool="echo"} 1
# HELP toolhost_tool_limit_hits_total Calls ended by a sandbox limit (timeout, memory_limit, output_too_large), by tool.
# TYPE toolhost_tool_limit_hits_total counter
toolhost_tool_limit_hits_total{limit="timeout",tool="slow"} 1
# HELP toolhost_tool_calls_in_flight Tool calls admitted and not yet answered, over every entry point.
# TYPE toolhost_tool_calls_in_flight gauge
toolhost_tool_calls_in_flight 3
# HELP toolhost_tool_calls_queued Tool calls waiting for admission.
# TYPE toolhost_tool_calls_queued gauge
toolhost_tool_calls_queued 5
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"toolhost_tool_calls_total", "toolhost_tool_limit_hits_total", "toolhost_tool_calls_in_flight", "toolhost_tool_calls_queued"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Fatalf("%d duration series, want echo and slow only", n)
	}
}

func TestCallLog(t *testing.T) {
	var buf bytes.Buffer
	l := CallLog{Log: slog.New(slog.NewJSONHandler(&buf, nil))}
	l.ObserveCall(context.Background(), record("echo", "alpha", host.EntryCLI, ""))
	r := record("other", "gamma", host.EntryHTTP, toolerr.CodeInvalidArguments)
	r.Decision, r.DecidedBy = "denied", "policy"
	l.ObserveCall(context.Background(), r)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines:\n%s", buf.String())
	}
	var first, second map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	for k, v := range map[string]any{"msg": "tool call", "entry": "cli", "tool": "echo", "plugin": "alpha", "digest": "abcdef010203", "outcome": "ok", "duration_ms": 12.0, "queued_ms": 2.0} {
		if first[k] != v {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	if second["outcome"] != "invalid_arguments" || second["decision"] != "denied" || second["decided_by"] != "policy" {
		t.Errorf("second line = %v", second)
	}
	if strings.Contains(buf.String(), "TOPSECRET") {
		t.Errorf("an argument value reached the log:\n%s", buf.String())
	}
	buf.Reset()
	l.Arguments = true
	l.ObserveCall(context.Background(), record("echo", "alpha", host.EntryCLI, ""))
	if !strings.Contains(buf.String(), `"arguments":"{\"text\":\"TOPSECRET\"}"`) {
		t.Fatalf("arguments missing although asked for:\n%s", buf.String())
	}
}
