package sandbox

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/toolhost/toolhost/host/engine/wasmcheck"
	"golang.org/x/sys/unix"
)

// leakyInstance instantiates testdata/leaky.wasm, prepared for snapshots,
// on image-backed memory, runs its (empty) init export and captures it.
func leakyInstance(t testing.TB, copyMax uint64) (api.Module, *snapshotState) {
	t.Helper()
	ctx := context.Background()
	wasm, err := os.ReadFile("testdata/leaky.wasm")
	if err != nil {
		t.Fatal(err)
	}
	p, err := prepareForSnapshot(wasm)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"toolhost:global:0", "toolhost:global:1"}; strings.Join(p.globals, ",") != strings.Join(want, ",") {
		t.Fatalf("globals %v, want %v (the immutable one left out)", p.globals, want)
	}
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	alloc := &imageAllocator{limit: 8 * 65536, copyMax: copyMax}
	mod, err := rt.InstantiateWithConfig(experimental.WithMemoryAllocator(ctx, alloc), p.wasm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.ExportedFunction(initExport).Call(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := capture(alloc, mod, p.globals)
	if err != nil {
		t.Fatal(err)
	}
	return mod, s
}

func callExport(t testing.TB, mod api.Module, name string) uint64 {
	t.Helper()
	res, err := mod.ExportedFunction(name).Call(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

// TestSnapshotNoStateSurvives: whatever a call writes to memory (its data
// segment, fresh pages, the last page) or to its mutable globals is gone
// after restore, call after call.
func TestSnapshotNoStateSurvives(t *testing.T) {
	for name, copyMax := range map[string]uint64{"memfd": 0, "copy": defaultCopyMax} {
		t.Run(name, func(t *testing.T) { testNoStateSurvives(t, copyMax) })
	}
}

func testNoStateSurvives(t *testing.T, copyMax uint64) {
	mod, s := leakyInstance(t, copyMax)
	for i := range 3 {
		if got := callExport(t, mod, "peek"); got != 0 {
			t.Fatalf("round %d: peek = %05b before leak, want 0", i, got)
		}
		callExport(t, mod, "leak")
		if got := callExport(t, mod, "peek"); got != 0b11111 {
			t.Fatalf("round %d: peek = %05b right after leak, want every bit (the leak itself failed)", i, got)
		}
		if err := s.restore(); err != nil {
			t.Fatal(err)
		}
		if got := callExport(t, mod, "peek"); got != 0 {
			t.Fatalf("round %d: peek = %05b after restore: state survived (bits: data, page, last page, i32 global, i64 global)", i, got)
		}
	}
	if b, _ := mod.Memory().Read(0, 5); string(b) != "hello" {
		t.Errorf("data segment after restore = %q, want hello", b)
	}
}

// TestSnapshotRefusesGrownMemory: a memory that grew cannot be put back
// (wazero cannot shrink it): restore fails, and the caller throws the
// instance away.
func TestSnapshotRefusesGrownMemory(t *testing.T) {
	mod, s := leakyInstance(t, 0)
	if got := callExport(t, mod, "grow"); got != 2 {
		t.Fatalf("grow returned %d, want the old size 2", got)
	}
	err := s.restore()
	if err == nil || !strings.Contains(err.Error(), "grew") {
		t.Fatalf("restore after grow: %v, want an error saying the memory grew", err)
	}
}

func TestPrepareForSnapshotRefuses(t *testing.T) {
	for name, wat := range map[string][]byte{
		// (module (func (export "toolhost:init")))
		"reserved export": []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x07\x11\x01\x0dtoolhost:init\x00\x00\x0a\x04\x01\x02\x00\x0b"),
		// (module (global (mut v128) (v128.const i64x2 0 0)))
		"mutable v128 global": append([]byte("\x00asm\x01\x00\x00\x00\x06\x16\x01\x7b\x01\xfd\x0c"), append(make([]byte, 16), 0x0b)...),
		"truncated":           []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60"),
	} {
		if _, err := prepareForSnapshot(wat); err == nil {
			t.Errorf("%s: prepared, want an error", name)
		}
	}
}

// FuzzPrepareForSnapshot: any bytes are refused or rewritten without a
// panic, and a module wazero accepts stays valid once prepared, with the
// init export callable.
func FuzzPrepareForSnapshot(f *testing.F) {
	for _, p := range []string{"testdata/leaky.wasm", "testdata/capprobe.wasm", "../../testdata/echo/echo.wasm"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
	f.Cleanup(func() { rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte) {
		p, err := prepareForSnapshot(wasm)
		// Only modules the host verified reach the pass (and wazero is not
		// hardened against arbitrary bytes).
		if _, verr := wasmcheck.Check(wasm, wasmcheck.Policy{MaxModuleBytes: 1 << 20, MaxMemoryPages: 64, MaxTableElements: MaxTableElements,
			AllowedImports: func(string, string) bool { return true }}); verr != nil {
			return
		}
		cm, cerr := rt.CompileModule(ctx, wasm)
		if cerr != nil {
			return
		}
		defer cm.Close(ctx)
		if err != nil {
			return // refusing a valid module is allowed: it keeps fresh instances
		}
		pm, err := rt.CompileModule(ctx, p.wasm)
		if err != nil {
			t.Fatalf("valid module invalid once prepared: %v", err)
		}
		defer pm.Close(ctx)
		exp := pm.ExportedFunctions()
		if _, ok := exp[initExport]; !ok {
			t.Fatalf("prepared module lacks %s", initExport)
		}
		if len(pm.ExportedFunctions()) != len(cm.ExportedFunctions())+1 {
			t.Fatalf("prepared module exports %d functions, want %d", len(pm.ExportedFunctions()), len(cm.ExportedFunctions())+1)
		}
	})
}

// BenchmarkSnapshotRestore: a call that dirties three pages and two
// globals, then a restore, against a fresh instantiation per call.
func BenchmarkSnapshotRestore(b *testing.B) {
	for _, fn := range []string{"leak", "peek"} { // peek writes nothing
		b.Run("memfd-after-"+fn, func(b *testing.B) { benchRestore(b, fn, 0) })
		b.Run("copy-after-"+fn, func(b *testing.B) { benchRestore(b, fn, defaultCopyMax) })
	}
	b.Run("fresh-instance", func(b *testing.B) {
		ctx := context.Background()
		wasm, err := os.ReadFile("testdata/leaky.wasm")
		if err != nil {
			b.Fatal(err)
		}
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		cm, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := mod.ExportedFunction("leak").Call(ctx); err != nil {
				b.Fatal(err)
			}
			mod.Close(ctx)
		}
	})
}

func benchRestore(b *testing.B, fn string, copyMax uint64) {
	mod, s := leakyInstance(b, copyMax)
	f := mod.ExportedFunction(fn)
	ctx := context.Background()
	for b.Loop() {
		if _, err := f.Call(ctx); err != nil {
			b.Fatal(err)
		}
		if err := s.restore(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSnapshotRefusal(t *testing.T) {
	for file, refused := range map[string]bool{
		"testdata/leaky.wasm":                 false,
		"../wasmcheck/testdata/features.wasm": true, // table.init, elem.drop, table.grow, data.drop
		"../../testdata/echo/echo.wasm":       false,
		"testdata/kernelsnoop.wasm":           false,
	} {
		wasm, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wasmcheck.Check(wasm, wasmcheck.Policy{MaxMemoryPages: 64, MaxTableElements: MaxTableElements, AllowedImports: func(string, string) bool { return true }})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := snapshotRefusal(m); (err != nil) != refused {
			t.Errorf("%s: snapshotRefusal = %v, want refused %v", file, err, refused)
		}
	}
}

// TestImageResetCopiesWrittenPages: a memfd-backed memory comes back to
// its snapshot byte for byte after calls write to it, whether reset copies
// the written pages back (they stay private: the next write takes no
// fault) or, past maxCopy, discards them all (none stays private).
func TestImageResetCopiesWrittenPages(t *testing.T) {
	ps := os.Getpagesize()
	const pages = 64
	for _, tc := range []struct {
		name        string
		maxCopy     uint64
		wantPrivate func(written int) bool
	}{
		{"copy", maxCopiedPages, func(w int) bool { return w > 0 }},
		{"discard", 4, func(w int) bool { return w == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, err := newImage(uint64(pages*ps), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Free()
			im.maxCopy = tc.maxCopy
			mem := im.Reallocate(uint64(pages * ps))
			for i := range mem {
				mem[i] = byte(i*7 + i/ps)
			}
			want := append([]byte(nil), mem...)
			if err := im.snapshot(); err != nil {
				t.Fatal(err)
			}
			if im.src == nil {
				t.Skip("no /proc/self/pagemap here: reset only discards")
			}
			for round := range 4 {
				// Each call writes other pages: the private set grows.
				for p := round; p < pages; p += 5 {
					mem[p*ps+round] ^= 0xff
					mem[p*ps+ps-1] = byte(round)
				}
				if err := im.reset(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(mem, want) {
					i := 0
					for mem[i] == want[i] {
						i++
					}
					t.Fatalf("round %d: byte %d (page %d) is %d after reset, the snapshot has %d", round, i, i/ps, mem[i], want[i])
				}
				private, ok := im.privatePages(uint64(pages * ps))
				if !ok || !tc.wantPrivate(len(private)) {
					t.Fatalf("round %d: %d private pages after reset (pagemap read: %v)", round, len(private), ok)
				}
			}
		})
	}
}

// TestImageSnapshotHoldsOnlyWrittenPages: the memfd behind a large
// memory's snapshot holds the pages that have data, not the memory's
// whole size: its pages are host memory that no process's resident size
// (the workers' memory cap) counts, and a module that declares 256 MiB
// and writes a few pages made every instance hold 256 MiB of it. The
// snapshot still reads back byte for byte.
func TestImageSnapshotHoldsOnlyWrittenPages(t *testing.T) {
	ps := os.Getpagesize()
	const size = 16 << 20
	im, err := newImage(size, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Free()
	mem := im.Reallocate(size)
	written := []int{0, 1, 2, 100, 2000, size/ps - 1} // pages, a run among them
	for _, p := range written {
		mem[p*ps+p%ps] = 0xa5
	}
	mem[size-1] = 1 // the last byte of the last page
	want := append([]byte(nil), mem...)
	if err := im.snapshot(); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(im.fd, &st); err != nil {
		t.Fatal(err)
	}
	if held, most := st.Blocks*512, int64(len(written)*ps); held > most {
		t.Fatalf("the snapshot of a %d MiB memory with %d pages written holds %d KiB, want at most %d KiB", size>>20, len(written), held>>10, most>>10)
	}
	for i := range mem {
		mem[i] = 0xff
	}
	if err := im.reset(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem, want) {
		t.Fatal("the memory does not read back as its snapshot after reset")
	}
}
