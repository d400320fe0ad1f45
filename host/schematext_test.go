package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// A signed schema whose pattern is heavy for long strings, called with a
// long string: the call is refused as invalid_arguments before the validator
// runs (it ran 11 s per MB for this pattern, past any deadline, and the
// answer then blamed the module's loading), and the tool still answers
// short arguments.
func TestHeavyPatternOnLongStringRefused(t *testing.T) {
	r := newRig(t, rigOptions{workers: 1})
	r.installEcho()
	r.mustInstall(pluginDef{name: "pat", wasm: corpus(t, "echo"), exports: []string{"echo"},
		limits: plugin.Limits{MemoryPages: 32, TimeoutMS: 1000, MaxOutputBytes: 1 << 20},
		params: `{"type":"object","properties":{"s":{"type":"string","pattern":"[ab]{500}c"}}}`})
	_, err := r.host.Call(context.Background(), "pat_echo", []byte(`{"s":"`+strings.Repeat("a", 100_000)+`"}`))
	if code := toolerr.CodeOf(err); code != toolerr.CodeInvalidArguments || !strings.Contains(err.Error(), "shorter strings") {
		t.Fatalf("got %v, want invalid_arguments asking for shorter strings", err)
	}
	short := `{"s":"` + strings.Repeat("a", 500) + `c"}`
	out, err := r.host.Call(context.Background(), "pat_echo", []byte(short))
	if err != nil || string(out) != short {
		t.Fatalf("a short argument: %s, %v", out, err)
	}
	r.echoAnswers(t)
}
