package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/worker"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// rig is the real stack: a badger store in a temporary directory, a pool
// of sandbox worker processes (this test binary, see TestMain), a host,
// and a trusted curator key that signs every plugin the test installs.
type rig struct {
	t    testing.TB
	host *host.Host
	pool *worker.Pool
	key  signing.PrivateKey
	// store is the host's store (TestConcurrentInstalls reopens it).
	store *store.Store
}

type rigOptions struct {
	workers      int
	allowPrivate bool
	// host holds further host options (admission, governor, observers);
	// Store, Engine and AllowPrivateNetwork are the rig's.
	host host.Options
}

func newRig(t testing.TB, o rigOptions) *rig {
	t.Helper()
	if o.workers == 0 {
		o.workers = 2
	}
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var budget int64 // the pool's default
	if raceEnabled {
		// Under -race two workers in a deep recursion and the 256 MiB
		// class pass the default budget for all workers, which would end
		// the recursion with memory_limit instead of its class's outcome;
		// the budget has its own test (worker, TestMemoryBudget…).
		budget = 4 * worker.DefaultMemoryBudget
	}
	pool, err := worker.NewPool(context.Background(), worker.Options{
		Command:           []string{exe, "sandbox-worker", "--cache", workerCache},
		Workers:           o.workers,
		MemoryBudgetBytes: budget,
		MeasurePeakRSS:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pool.Close(ctx); err != nil {
			t.Errorf("pool.Close: %v", err)
		}
	})
	hopts := o.host
	hopts.Store, hopts.Engine, hopts.AllowPrivateNetwork = st, pool, o.allowPrivate
	h, err := host.New(hopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	key, err := signing.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddTrustedKey("hostile-suite", key.Public()); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, host: h, pool: pool, key: key, store: st}
}

// pluginDef is one plugin to install: its wasm and one tool per export.
type pluginDef struct {
	name    string
	wasm    []byte
	exports []string // tool i is named name + "_" + exports[i] (or "echo")
	limits  plugin.Limits
	hosts   []string
	version string // "" is 1.0.0
	// tools names the tools (one per export) instead of name_export;
	// params is every tool's parameter schema instead of {"type":"object"}.
	tools  []string
	params string
}

// toolName is the tool a test calls for export of plugin name.
func toolName(name, export string) string { return name + "_" + export }

// bundle builds and signs the plugin.
func (r *rig) bundle(d pluginDef) *plugin.Bundle {
	r.t.Helper()
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Export      string          `json:"export"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var tools []tool
	params := d.params
	if params == "" {
		params = `{"type":"object"}`
	}
	for i, e := range d.exports {
		name := toolName(d.name, e)
		if i < len(d.tools) {
			name = d.tools[i]
		}
		tools = append(tools, tool{Name: name, Description: "hostile corpus: " + d.name + "." + e, Export: e, Parameters: json.RawMessage(params)})
	}
	version := d.version
	if version == "" {
		version = "1.0.0"
	}
	hosts := d.hosts
	if hosts == nil {
		hosts = []string{}
	}
	manifest, err := json.Marshal(map[string]any{
		"name": d.name, "version": version, "description": "hostile corpus plugin " + d.name, "wasm": "plugin.wasm",
		"tools": tools, "limits": d.limits,
		"permissions": map[string]any{"allowed_hosts": hosts, "allowed_paths": map[string]string{}},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	b, err := plugin.NewBundle(manifest, d.wasm)
	if err != nil {
		r.t.Fatalf("bundle %s: %v", d.name, err)
	}
	if _, err := b.AddSignature(signing.Sign(r.key, b.Digest(), time.Time{})); err != nil {
		r.t.Fatal(err)
	}
	return b
}

// install signs and installs the plugin; the error is Install's.
func (r *rig) install(d pluginDef) error {
	r.t.Helper()
	_, err := r.host.Install(context.Background(), r.bundle(d), host.InstallOptions{})
	return err
}

func (r *rig) mustInstall(d pluginDef) {
	r.t.Helper()
	if err := r.install(d); err != nil {
		r.t.Fatalf("install %s: %v", d.name, err)
	}
}

// installEcho installs the benign echo plugin (tool "echo_echo").
func (r *rig) installEcho() {
	r.mustInstall(pluginDef{name: "echo", wasm: corpus(r.t, "echo"), exports: []string{"echo"},
		limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 2000, MaxOutputBytes: 1 << 20}})
}

// echoAnswers checks that the benign tool still answers.
func (r *rig) echoAnswers(t testing.TB) {
	t.Helper()
	args := `{"ping":` + strconv.FormatInt(time.Now().UnixNano(), 10) + `}`
	out, err := r.host.Call(context.Background(), "echo_echo", []byte(args))
	if err != nil || string(out) != args {
		t.Fatalf("the benign tool does not answer: %s, %v", out, err)
	}
}

const corpusDir = "testdata/hostile"

// corpus reads testdata/hostile/NAME.wasm.
func corpus(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resetHostPeak restarts the kernel's count of this process's peak
// resident memory, so hostPeak measures from now.
func resetHostPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// hostPeak is this process's peak resident memory (VmHWM) in bytes.
func hostPeak() int64 { return statusKB("VmHWM:") }

func statusKB(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func mib(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 0, 64) + " MiB"
}

// bigDataModule is a module whose one active data segment holds n bytes,
// with memory for it; "run" returns 0. Built here rather than checked in:
// it is as large as the data.
func bigDataModule(n int, pages uint32) []byte {
	leb := func(v uint64) []byte {
		var out []byte
		for {
			b := byte(v & 0x7f)
			v >>= 7
			if v == 0 {
				return append(out, b)
			}
			out = append(out, b|0x80)
		}
	}
	sec := func(id byte, content []byte) []byte {
		return append(append([]byte{id}, leb(uint64(len(content)))...), content...)
	}
	var m bytes.Buffer
	m.WriteString("\x00asm\x01\x00\x00\x00")
	m.Write(sec(1, []byte{1, 0x60, 0, 1, 0x7f}))                   // type () -> i32
	m.Write(sec(3, []byte{1, 0}))                                  // one function
	m.Write(sec(5, append([]byte{1, 0}, leb(uint64(pages))...)))   // memory min pages
	m.Write(sec(7, []byte{1, 3, 'r', 'u', 'n', 0, 0}))             // export "run"
	m.Write(sec(10, []byte{1, 4, 0, 0x41, 0, 0x0b}))               // i32.const 0
	seg := append([]byte{1, 0, 0x41, 0, 0x0b}, leb(uint64(n))...)  // active, offset 0
	m.Write(sec(11, append(seg, bytes.Repeat([]byte{'x'}, n)...))) // the data
	return m.Bytes()
}
