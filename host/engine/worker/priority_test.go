package worker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Workers run workerNice levels below the host, every thread of them: the
// host's supervision (deadline kills, cancellation, the audit record, the
// answer) must not wait for a core behind the plugins it supervises.
func TestWorkersRunBelowTheHostsPriority(t *testing.T) {
	p := newTestPool(t, Options{Workers: 2})
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := min(20-prio+workerNice, 19)
	p.procsMu.Lock()
	var pids []int
	for w := range p.procs {
		pids = append(pids, w.cmd.Process.Pid)
	}
	p.procsMu.Unlock()
	if len(pids) != 2 {
		t.Fatalf("%d workers, want 2", len(pids))
	}
	for _, pid := range pids {
		tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
		if err != nil || len(tasks) == 0 {
			t.Fatalf("worker %d: no threads found (%v)", pid, err)
		}
		for _, task := range tasks {
			if got := niceOf(t, task); got != want {
				t.Errorf("%s: nice %d, want %d (the host's %d + %d)", task, got, want, 20-prio, workerNice)
			}
		}
	}
}

// niceOf reads the nice value from a /proc/PID/task/TID/stat file: field
// 19, counted after the command's closing parenthesis.
func niceOf(t *testing.T, stat string) int {
	t.Helper()
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, err := strconv.Atoi(fields[16]) // state is field 3, nice field 19
	if err != nil {
		t.Fatalf("%s: %v", stat, err)
	}
	return n
}
