package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// httpChild is the argument that makes this test binary the HTTP load
// client of the toolhost-http rows: URL TOKEN TOOL INPUT CLIENTS N.
const httpChild = "bench-http-child"

// runHTTPChild is the load client, in a process of its own as an outside
// check runs one: CLIENTS goroutines with keep-alive connections call TOOL
// with INPUT. Each client makes 20 calls first (connections up, server
// warm), then the child prints "ready" and waits for a line on stdin; then
// the clients make N calls between them, and it prints
// "NS P50_NS P99_NS ERRORS ALLOCS" (the wall time of the N calls, the
// latency percentiles of the calls that succeeded, the failed ones, the
// client's heap allocations), the first error on stderr.
func runHTTPChild(args []string) int {
	if len(args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: bench-http-child URL TOKEN TOOL INPUT CLIENTS N")
		return 2
	}
	url, token, input := args[0]+"/v1/tools/"+args[2]+"/call", "Bearer "+args[1], []byte(`{"arguments":`+args[3]+`}`)
	clients, err1 := strconv.Atoi(args[4])
	n, err2 := strconv.Atoi(args[5])
	if err1 != nil || err2 != nil || clients < 1 || n < 0 {
		fmt.Fprintln(os.Stderr, "CLIENTS and N must be counts")
		return 2
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	call := func() error {
		req, err := http.NewRequest("POST", url, bytes.NewReader(input))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
		}
		return nil
	}
	if _, errs := runClients(clients, func(int) int { return 20 }, call); errs.first != nil {
		fmt.Fprintln(os.Stderr, "warm-up:", errs.first)
		return 1
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 1
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	all, errs := runClients(clients, share(n, clients), call)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&m1)
	slices.Sort(all)
	var p50, p99 time.Duration
	if len(all) > 0 {
		p50, p99 = all[len(all)/2], all[min(len(all)-1, len(all)*99/100)]
	}
	fmt.Println(elapsed.Nanoseconds(), p50.Nanoseconds(), p99.Nanoseconds(), n-len(all), m1.Mallocs-m0.Mallocs)
	if errs.first != nil {
		fmt.Fprintln(os.Stderr, errs.first)
	}
	return 0
}

// bench measures the subject's tool over HTTP: b.N calls from a client
// process of its own (runHTTPChild), as an outside check runs one — in
// this process, which holds every other row's fixtures, the client ran
// at about half the speed. It reports what measureParallel does, the
// client's allocations as allocs/op, and the CPU time the server and its
// workers spent per call (server_cpu_us): unlike calls/s, it hardly moves
// when neighbours load the machine, so it is the figure to compare
// changes by.
func (srv *server) bench(b *testing.B, s *subject, clients int) {
	cmd := exec.Command(os.Args[0], httpChild, srv.url, srv.token, s.tool, string(s.input), strconv.Itoa(clients), strconv.Itoa(b.N))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("HTTP client: %q; stderr:\n%s", lines.Text(), stderr.String())
	}
	b.ResetTimer()
	cpu0 := treeCPU(srv.cmd.Process.Pid)
	fmt.Fprintln(stdin)
	if !lines.Scan() {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("HTTP client printed no result; stderr:\n%s", stderr.String())
	}
	cpu := treeCPU(srv.cmd.Process.Pid) - cpu0
	b.StopTimer()
	var ns, p50, p99, failed, allocs int64
	if _, err := fmt.Sscan(lines.Text(), &ns, &p50, &p99, &failed, &allocs); err != nil || ns <= 0 {
		b.Fatalf("HTTP client printed %q (%v)", lines.Text(), err)
	}
	if failed > 0 {
		b.Logf("%d of %d calls failed; the first: %s", failed, b.N, strings.TrimSpace(stderr.String()))
	}
	if failed == int64(b.N) {
		b.Fatal("every call failed")
	}
	b.ReportMetric(float64(failed), "errors")
	b.ReportMetric(float64(allocs)/float64(b.N), "allocs/op") // the client's
	b.ReportMetric(float64(p50)/1e3, "p50_us")
	b.ReportMetric(float64(p99)/1e3, "p99_us")
	b.ReportMetric(float64(int64(b.N)-failed)/(float64(ns)/1e9), "calls/s")
	if cpu0 > 0 && b.N > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "server_cpu_us")
	}
}
