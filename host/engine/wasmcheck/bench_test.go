package wasmcheck

import "testing"

func BenchmarkCheckPlugin(b *testing.B) {
	wasm := readTestdata(b, "plugin.wasm")
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(wasm, allowAll); err != nil {
			b.Fatal(err)
		}
	}
}
