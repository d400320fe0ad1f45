package bench

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// home is a toolhost home run by the real binary.
type home struct {
	tb    testing.TB
	bin   string
	dir   string
	env   []string
	token string
}

func newHome(tb testing.TB) *home {
	raw := make([]byte, 16)
	rand.Read(raw)
	h := &home{tb: tb, bin: testplugins.Toolhost(tb), dir: tb.TempDir(), token: hex.EncodeToString(raw)}
	h.env = append(os.Environ(), "TOOLHOST_HOME="+filepath.Join(h.dir, "home"), "TOOLHOST_TOKEN="+h.token)
	return h
}

func (h *home) run(args ...string) {
	h.tb.Helper()
	cmd := exec.Command(h.bin, append([]string{"--dev-allow-unsigned"}, args...)...)
	cmd.Env = h.env
	if out, err := cmd.CombinedOutput(); err != nil {
		h.tb.Fatalf("toolhost %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// install writes the subject's bundle (named name) and installs it.
func (h *home) install(s *subject, name string, rename bool) {
	h.tb.Helper()
	path := filepath.Join(h.dir, name+".plugin")
	if err := os.WriteFile(path, s.bundle(h.tb, name, false, rename).Bytes(), 0o644); err != nil {
		h.tb.Fatal(err)
	}
	h.run("plugin", "install", path)
}

// server is a running `toolhost serve` (its default, serve-sized worker
// pool), with keep-alive clients.
type server struct {
	cmd     *exec.Cmd
	url     string
	token   string
	client  *http.Client
	started time.Duration // from exec to "serving … tools"
	logs    *bytes.Buffer
	once    sync.Once
}

func (h *home) serve() *server {
	h.tb.Helper()
	cmd := exec.Command(h.bin, "--dev-allow-unsigned", "serve", "--addr", "127.0.0.1:0", "--max-in-flight", "256", "--max-in-flight-per-plugin", "256")
	cmd.Env = h.env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		h.tb.Fatal(err)
	}
	s := &server{cmd: cmd, token: h.token, logs: &bytes.Buffer{},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	cmd.Stderr = s.logs // read only once the process has ended
	start := time.Now()
	if err := cmd.Start(); err != nil {
		h.tb.Fatal(err)
	}
	re := regexp.MustCompile(`serving \d+ tools on (http://\S+)`)
	lines := bufio.NewScanner(stdout)
	kill := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			s.url = m[1]
			break
		}
	}
	s.started = time.Since(start)
	if s.url == "" {
		cmd.Process.Kill()
		cmd.Wait()
		h.tb.Fatalf("serve did not start; stderr:\n%s", s.logs)
	}
	go io.Copy(io.Discard, stdout)
	h.tb.Cleanup(s.stop)
	return s
}

// stop ends the server with SIGINT (SIGKILL after 20 s).
func (s *server) stop() {
	s.once.Do(func() {
		s.client.CloseIdleConnections()
		s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
	})
}

// call calls tool with args JSON over HTTP.
func (s *server) call(tool string, args []byte) error {
	body := make([]byte, 0, len(args)+16)
	body = append(append(append(body, `{"arguments":`...), args...), '}')
	req, err := http.NewRequest("POST", s.url+"/v1/tools/"+tool+"/call", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: HTTP %d: %s", tool, resp.StatusCode, data)
	}
	return nil
}

// startServer installs the subject into a new home and serves it.
func startServer(tb testing.TB, s *subject) *server {
	h := newHome(tb)
	h.install(s, s.name, false)
	return h.serve() // each row warms it (server.bench)
}

// bench measures the subject's tool over HTTP with keep-alive clients.
// It also reports the CPU time the server and its workers spent per call
// (server_cpu_us): unlike calls/s, it hardly moves when neighbours load
// the machine, so it is the figure to compare changes by.
func (srv *server) bench(b *testing.B, s *subject, clients int) {
	srv.warm(b, s, clients)
	cpu0 := treeCPU(srv.cmd.Process.Pid)
	measureParallel(b, clients, func() error { return srv.call(s.tool, s.input) })
	if cpu0 > 0 && b.N > 0 {
		b.ReportMetric(float64((treeCPU(srv.cmd.Process.Pid)-cpu0).Microseconds())/float64(b.N), "server_cpu_us")
	}
}

// treeCPU is the CPU time (user and system) used so far by process pid and
// its live descendants, and the children it has waited for; 0 if /proc
// cannot tell.
func treeCPU(pid int) time.Duration {
	var ticks int64
	for i, p := range tree(pid) {
		f := statFields(p)
		last := 12 // utime, stime (fields 14, 15)
		if i == 0 {
			last = 14 // and cutime, cstime (16, 17) of the root
		}
		if len(f) <= last {
			continue
		}
		for _, v := range f[11 : last+1] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// statFields are the fields of /proc/PID/stat after the command name
// (which is in parentheses and may hold spaces): state first, so field N
// of proc(5) is at index N-3. Nil if pid is gone.
func statFields(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
}

// tree is pid and its live descendants, pid first.
func tree(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(p); len(f) >= 2 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// BenchmarkStartup restarts a `toolhost serve` holding 20 installed copies
// of the echo plugin (the compilation cache already filled, as after any
// earlier run) and reports per restart: the time from exec until it
// serves (cold_start_ms), the first call after that (first_call_ms), and
// the resident memory of the server and its workers once all 20 plugins
// have answered a call (rss_mib).
func BenchmarkStartup(b *testing.B) {
	const plugins = 20
	s := echoSubject(b)
	h := newHome(b)
	names := make([]string, plugins)
	for i := range names {
		names[i] = fmt.Sprintf("echo%02d", i+1)
		h.install(s, names[i], true)
	}
	first := h.serve() // fills the compilation cache
	for _, n := range names {
		if err := first.call(n+"_echo", s.input); err != nil {
			b.Fatal(err)
		}
	}
	first.stop()
	var starts, firsts, rss []float64
	b.ResetTimer()
	for range b.N {
		srv := h.serve()
		t0 := time.Now()
		if err := srv.call(names[0]+"_echo", s.input); err != nil {
			b.Fatal(err)
		}
		firsts = append(firsts, ms(time.Since(t0)))
		starts = append(starts, ms(srv.started))
		for range 2 {
			for _, n := range names {
				if err := srv.call(n+"_echo", s.input); err != nil {
					b.Fatal(err)
				}
			}
		}
		mib := treeRSS(srv.cmd.Process.Pid)
		if mib == 0 {
			b.Fatal("no resident memory read from /proc for serve and its workers")
		}
		rss = append(rss, mib)
		srv.stop()
	}
	b.StopTimer()
	b.ReportMetric(plugins, "plugins")
	b.ReportMetric(median(starts), "cold_start_ms")
	b.ReportMetric(median(firsts), "first_call_ms")
	b.ReportMetric(median(rss), "rss_mib")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	c := slices.Sorted(slices.Values(xs))
	return c[len(c)/2]
}

// treeRSS sums VmRSS over pid and its descendants, in MiB.
func treeRSS(pid int) float64 {
	var kib int64
	for _, p := range tree(pid) {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				kib += n
			}
		}
	}
	return float64(kib) / 1024
}

// warm calls the subject's tool from clients callers at once, 20 calls
// each, so the worker pool has grown to what the measurement will use and
// every worker has loaded the module: the pool retires idle workers after
// a few seconds (while other rows run), and a worker started inside the
// measurement would count its process start and module load.
func (srv *server) warm(tb testing.TB, s *subject, clients int) {
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for range 20 {
				if err := srv.call(s.tool, s.input); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}
