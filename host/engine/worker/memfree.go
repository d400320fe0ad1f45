package worker

import (
	"golang.org/x/sys/unix"
)

// A killed worker gives its memory back only as fast as its own teardown
// runs, and that teardown is scheduled like any thread of the process: a
// worker lowered below the host (workerNice), on cores that other workers
// keep busy, held a 256 MiB memory for tens to hundreds of milliseconds
// after its SIGKILL, while the other workers went on filling theirs. So
// the supervisor frees a killed worker's memory itself, in its own thread
// and at its own priority (process_mrelease, Linux 5.15; where it is
// missing, the teardown does it as before). RATIONALE.md, "One memory
// budget for all sandbox workers".

// openPidfd opens a pidfd for w's process, which is an unreaped child (so
// its pid cannot have been reused), for releaseMemory; -1 where pidfds are
// not available.
func (w *proc) openPidfd() {
	fd, err := unix.PidfdOpen(w.cmd.Process.Pid, 0)
	if err != nil {
		fd = -1
	}
	w.pidfdMu.Lock()
	w.pidfd = fd
	w.pidfdMu.Unlock()
}

// releaseMemory frees the memory of w, which has been sent SIGKILL, in
// the calling thread. It does nothing once w is reaped, and fails
// harmlessly (EINVAL) for a process that is not dying.
func (w *proc) releaseMemory() {
	w.pidfdMu.Lock()
	defer w.pidfdMu.Unlock()
	if w.pidfd >= 0 {
		_, _, _ = unix.Syscall(unix.SYS_PROCESS_MRELEASE, uintptr(w.pidfd), 0, 0)
	}
}

// closePidfd closes w's pidfd once the process is reaped.
func (w *proc) closePidfd() {
	w.pidfdMu.Lock()
	defer w.pidfdMu.Unlock()
	if w.pidfd >= 0 {
		unix.Close(w.pidfd)
		w.pidfd = -1
	}
}
