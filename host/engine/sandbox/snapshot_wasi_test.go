package sandbox

import (
	"context"
	"testing"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/plugin"
)

// compileGranted compiles the module at path as compileFile does, with
// dir granted at /data.
func compileGranted(t *testing.T, path, dir string, reuse bool, exports ...string) *inProcessModule {
	t.Helper()
	return compileSpec(t, path, engine.Spec{Name: "granted", Exports: exports, ReuseInstances: reuse,
		Permissions: plugin.Permissions{AllowedPaths: map[string]string{dir: "/data"}}})
}

// TestCallInitDescriptorsDoNotCarryState: a descriptor opened while an
// instance initializes (by the start function, or by _initialize, which
// extism runs before the snapshot) is in no snapshot, and fd_read, which
// calls may use without tainting their instance, moves its offset. Fresh
// calls must each read the file from its start; the reuse control arm
// shows the offset moving (so the test can see the leak).
func TestCallInitDescriptorsDoNotCarryState(t *testing.T) {
	ft := newFileTree(t)
	for _, c := range []struct {
		export string
		bytes  string // what successive reads of the file give
	}{
		{"first", "hello"},  // opened by the start function
		{"second", "- wri"}, // opened by _initialize
	} {
		t.Run(c.export, func(t *testing.T) {
			control := compileGranted(t, "testdata/initopen.wasm", ft.granted, true, "first", "second")
			for i := range len(c.bytes) {
				if got := readByte(t, control, c.export); got != c.bytes[i] {
					t.Fatalf("control (reused instance), read %d: byte %q, want %q: the test cannot see the offset move", i, got, c.bytes[i])
				}
			}
			m := compileGranted(t, "testdata/initopen.wasm", ft.granted, false, "first", "second")
			for i := range len(c.bytes) {
				if got := readByte(t, m, c.export); got != c.bytes[0] {
					t.Fatalf("fresh call %d read byte %q, want %q: the descriptor's offset survived an earlier call", i, got, c.bytes[0])
				}
			}
		})
	}
}

// readByte calls export and returns the one byte it answers.
func readByte(t *testing.T, m *inProcessModule, export string) byte {
	t.Helper()
	out, err := m.Call(context.Background(), export, nil)
	if err != nil || len(out) != 1 {
		t.Fatalf("%s: %q, %v; want one byte", export, out, err)
	}
	return out[0]
}
