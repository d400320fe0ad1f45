package host_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// TestHostileArguments: huge and deeply nested arguments are refused by the
// host before any sandbox starts.
func TestHostileArguments(t *testing.T) {
	r := newRig(t, rigOptions{workers: 1})
	r.installEcho()
	deep := `{"a":` + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + `}`
	for _, c := range []struct {
		name string
		args []byte
	}{
		{"10 MB body", append(append([]byte(`{"a":"`), bytes.Repeat([]byte("x"), 10<<20)...), `"}`...)},
		{"depth 10 000", []byte(deep)},
		{"depth 65", []byte(`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`)},
		{"not an object", []byte(`[1,2,3]`)},
		{"two values", []byte(`{} {}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := r.host.Call(context.Background(), "echo_echo", c.args)
			if code := toolerr.CodeOf(err); code != toolerr.CodeInvalidArguments {
				t.Fatalf("got %v, want invalid_arguments", err)
			}
			t.Logf("invalid_arguments in %v: %.120s", time.Since(start).Round(time.Millisecond), err)
			r.echoAnswers(t)
		})
	}
	// Arguments that pass the host's checks but not the plugin's memory
	// (1 MiB) end with memory_limit, not with an empty input.
	r.mustInstall(pluginDef{name: "smallmem", wasm: corpus(t, "echo"), exports: []string{"echo"},
		limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 2000, MaxOutputBytes: 2 << 20}})
	big := append(append([]byte(`{"a":"`), bytes.Repeat([]byte("x"), 1<<20-100)...), `"}`...)
	if _, err := r.host.Call(context.Background(), "smallmem_echo", big); toolerr.CodeOf(err) != toolerr.CodeMemoryLimit || !strings.Contains(err.Error(), "arguments") {
		t.Fatalf("arguments larger than the plugin's memory: got %v, want memory_limit", err)
	}
}

// TestHostileNetworkRedirect: with the operator's grant for private
// addresses (so that a local server is reachable at all), a redirect from
// an allowed host to a host outside allowed_hosts, or to the cloud
// metadata address, is refused at the hop.
func TestHostileNetworkRedirect(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("fine")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	mux.HandleFunc("/to-ip", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+port+"/ok", http.StatusFound)
	})
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	r := newRig(t, rigOptions{workers: 1, allowPrivate: true})
	r.installEcho()
	r.mustInstall(pluginDef{name: "fetch", wasm: corpus(t, "fetch"), exports: []string{"fetch"}, limits: hostileLimits, hosts: []string{"localhost"}})
	for _, c := range []struct {
		path string
		want toolerr.Code
		msg  string
	}{
		{"/ok", toolerr.CodePluginError, `"status":200`}, // the module fails with the response as its message
		{"/to-ip", toolerr.CodePermissionDenied, `"127.0.0.1" is not in the plugin's allowed_hosts`},
		{"/to-metadata", toolerr.CodePermissionDenied, `"169.254.169.254" is not in the plugin's allowed_hosts`},
	} {
		t.Run(c.path, func(t *testing.T) {
			_, err := r.host.Call(context.Background(), "fetch_fetch", []byte(`{"url":"http://localhost:`+port+c.path+`"}`))
			if toolerr.CodeOf(err) != c.want || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want %s mentioning %s", err, c.want, c.msg)
			}
			r.echoAnswers(t)
		})
	}
}

// TestHostileWorkerCrash: a worker killed from outside, idle or in the
// middle of a call, is replaced; the call it was running ends with a typed
// error and every other call is unaffected.
func TestHostileWorkerCrash(t *testing.T) {
	r := newRig(t, rigOptions{workers: 2})
	r.installEcho()
	r.mustInstall(pluginDef{name: "loop", wasm: corpus(t, "infinite_loop"), exports: []string{"run"},
		limits: plugin.Limits{MemoryPages: 16, TimeoutMS: 5000, MaxOutputBytes: 1024}})
	r.echoAnswers(t)

	// Idle workers killed: once the pool has noticed (it waits on its
	// children), they are replaced without a call seeing them.
	pids := workerPIDs(t)
	if len(pids) != 2 {
		t.Fatalf("found %d worker processes, want 2", len(pids))
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for end := time.Now().Add(10 * time.Second); r.pool.Stats().Crashed < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the pool did not notice its workers died: %+v", r.pool.Stats())
		}
	}
	for range 4 {
		r.echoAnswers(t)
	}
	waitWorkers(t, r, 2, 10*time.Second)

	// A busy worker killed: its call fails, typed. (The idle one is
	// killed too; a call that reaches it in the instant before the pool
	// notices fails the same way, which SECURITY.md lists as a limit.)
	crashedBefore := r.pool.Stats().Crashed
	before := map[int]bool{}
	for _, pid := range workerPIDs(t) {
		before[pid] = true
	}
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := r.host.Call(context.Background(), "loop_run", []byte(`{}`))
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	for _, pid := range workerPIDs(t) {
		if before[pid] {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	err := <-errc
	if toolerr.CodeOf(err) != toolerr.CodePluginError || !strings.Contains(err.Error(), "crashed") {
		t.Fatalf("call on a killed worker: got %v, want plugin_error (crashed)", err)
	}
	t.Logf("call on a worker killed from outside ended after %v: %v", time.Since(start).Round(time.Millisecond), err)
	for end := time.Now().Add(10 * time.Second); r.pool.Stats().Crashed < crashedBefore+2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the pool did not notice both deaths: %+v", r.pool.Stats())
		}
	}
	r.echoAnswers(t)
	waitWorkers(t, r, 2, 10*time.Second)
	st := r.pool.Stats()
	if st.Crashed < 3 || st.Workers != 2 {
		t.Errorf("stats: %+v, want at least 3 crashes counted and 2 workers", st)
	}
}

// workerPIDs lists the sandbox workers of this process.
func workerPIDs(t testing.TB) []int {
	t.Helper()
	self := os.Getpid()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces: cut after ')'.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) < 2 || f[1] != strconv.Itoa(self) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte("sandbox-worker")) {
			pids = append(pids, pid)
		}
	}
	return pids
}
