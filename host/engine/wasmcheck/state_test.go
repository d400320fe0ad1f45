package wasmcheck

import "testing"

// TestStateSummary: what a call can change besides memories and globals
// is recorded (the sandbox resets instances from snapshots only when
// neither is set).
func TestStateSummary(t *testing.T) {
	for _, c := range []struct {
		file                     string
		mutatesTables, dropsData bool
	}{
		{"plugin.wasm", false, false},
		{"features.wasm", true, true}, // table.init, elem.drop, table.grow; data.drop
		{"extism-kernel-v1.7.0.wasm", false, false},
	} {
		m, err := Check(readTestdata(t, c.file), allowAll)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if m.MutatesTables != c.mutatesTables || m.DropsData != c.dropsData {
			t.Errorf("%s: MutatesTables %v DropsData %v, want %v %v", c.file, m.MutatesTables, m.DropsData, c.mutatesTables, c.dropsData)
		}
	}
	// (module (table 1 funcref) (func (table.set (i32.const 0) (ref.null func))))
	wasm := oneFunc(body(b(0x00), 0x41, 0x00, 0xd0, 0x70, 0x26, 0x00), sec(4, vec(b(0x70, 0x01, 0x01, 0x01))))
	m, err := Check(wasm, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	if !m.MutatesTables || m.UsesTableGrow {
		t.Errorf("table.set: %+v", m)
	}
}
