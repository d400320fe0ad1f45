package sandbox

import (
	"context"
	"testing"

	"github.com/toolhost/toolhost/host/toolerr"
)

// TestGuestErrorIsNotTheEngines: a tool's own error message (error_set)
// is reported as plugin_error with its words, whatever they say; before,
// one that read like the engine's ("unknown function", "wasm error:" with
// "out of memory" on stderr) turned into invalid_module or memory_limit,
// a verdict about the module or the host's limits that nothing had made.
// Both call paths: the direct one of a snapshot-reset instance, and
// extism's of a plain instance.
func TestGuestErrorIsNotTheEngines(t *testing.T) {
	messages := []string{
		"unknown function: get_time",
		"wasm error: unreachable",
		"wasm error: out of bounds memory access",
		"stack overflow",
		"could not read value at offset 0",
		"instantiating module failed",
		"the tool returned error code 3",
	}
	for _, path := range []string{"direct", "plain"} {
		t.Run(path, func(t *testing.T) {
			m := compileFile(t, "testdata/guesterror.wasm", false, "fail")
			if path == "plain" {
				m.drain()
				m.prep = nil // instances from now on are plain ones
			} else if m.prep == nil {
				t.Fatal("the module was not prepared: the direct path is not tested")
			}
			for _, msg := range messages {
				_, err := m.Call(context.Background(), "fail", []byte(msg))
				te := toolerr.As(err)
				if te == nil || te.Code != toolerr.CodePluginError || te.Message != msg {
					t.Errorf("error_set %q: got %v, want plugin_error with exactly that message", msg, err)
				}
			}
		})
	}
}
