package host_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// customSectionModule is a valid module whose "run" returns 0, made large
// by one custom section of n bytes (custom sections are accepted, up to the
// 64 MiB module limit): the cheapest plugin that is as big as a module may
// be.
func customSectionModule(n int, fill byte) []byte {
	m := bigDataModule(0, 1)
	name := []byte("pad")
	content := append(append([]byte{byte(len(name))}, name...), bytes.Repeat([]byte{fill}, n)...)
	sec := []byte{0}
	for v := uint64(len(content)); ; {
		b := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			sec = append(sec, b)
			break
		}
		sec = append(sec, b|0x80)
	}
	return append(append(m, sec...), content...)
}

// liveHeap is the heap still reachable after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// The host holds each installed plugin's wasm once, however often it
// reloads (every install, remove, trust or settings change reloads every
// plugin). Each reload used to read every plugin's wasm from the store
// again and keep the new copy beside the one the compiled module held: a
// copy more per plugin in use, so four plugins of the 64 MiB module limit
// took `serve` past 1 GiB of resident memory (1.2 GiB measured), and
// removing them, which reloads, took it to 1.46 GiB.
func TestHostileLargeModulesAreHeldOnce(t *testing.T) {
	const size = 24 << 20
	r := newRig(t, rigOptions{})
	r.installEcho()
	limits := plugin.Limits{MemoryPages: 16, TimeoutMS: 20000, MaxOutputBytes: 1024}
	before := liveHeap()
	for i, name := range []string{"big_a", "big_b"} {
		r.mustInstall(pluginDef{name: name, wasm: customSectionModule(size, byte(i)), exports: []string{"run"}, limits: limits})
		// A call compiles the module: from then on the pool holds it too.
		if _, err := r.host.Call(context.Background(), toolName(name, "run"), []byte(`{}`)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for range 3 {
		if err := r.host.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	r.echoAnswers(t)
	grown := int64(liveHeap()) - int64(before)
	t.Logf("live heap grew by %s for two plugins of %s", mib(grown), mib(size))
	// Two copies and a half of slack: one copy each, not two.
	if grown > 5*size/2 {
		t.Fatalf("the host holds %s for two plugins of %s each after three reloads: more than one copy of each module", mib(grown), mib(size))
	}
}
