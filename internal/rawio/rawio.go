// Package rawio reads and writes descriptors with raw system calls, for the
// hot paths of a call: the API's TCP connections (Listener), the worker
// pipes and the audit log's writes.
//
// Why: an ordinary read or write (os.File, net.TCPConn) goes through the
// scheduler's system-call path (entersyscall), and that path wakes the
// runtime's monitor thread, sysmon, whenever the process had gone idle; a
// woken sysmon then polls every 20 µs for the next millisecond, and each
// of those wake-ups is a timer interrupt and a context switch — on this
// project's 2-core VM, VM exits. Measured with perf on `toolhost serve`:
// sysmon took 19.6% of the server's samples with one sequential client and
// 8.3% with eight; with this package on the sockets and the audit log's
// writes, 1.4% and 0.4%. A raw system call does not tell the scheduler; that is
// right for calls that do not block: a read or write of a non-blocking
// socket or pipe (EAGAIN instead of blocking: Read and Write then wait in
// the runtime's poller, which honours the descriptor's deadlines), and a
// write to a regular file (the page cache).
//
// Trust: nothing here interprets bytes; it moves them. Errors are the
// system call's or the poller's (deadline exceeded, closed descriptor).
package rawio

import (
	"io"
	"syscall"
	"unsafe"
)

// Read reads into b from the non-blocking descriptor behind rc, waiting in
// the poller while it is empty. At the end of the stream it returns io.EOF.
func Read(rc syscall.RawConn, b []byte) (int, error) { return ReadPolling(rc, b, nil) }

// ReadPolling is Read, except that each time it finds the descriptor empty
// it first asks poll (when not nil): true tries the read again at once,
// false waits in the poller. poll runs on the reading goroutine, between
// system calls.
func ReadPolling(rc syscall.RawConn, b []byte, poll func() bool) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				n = int(r)
				return true
			case syscall.EINTR:
			case syscall.EAGAIN:
				if poll == nil || !poll() {
					return false // empty: wait in the poller, then try again
				}
			default:
				errno = e
				return true
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of b to the non-blocking descriptor behind rc, waiting
// in the poller while it is full. It returns how much was written before
// an error (a deadline, a closed descriptor) stopped it.
func Write(rc syscall.RawConn, b []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // full: wait in the poller, then go on
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = errno
	}
	return n, err
}

// Pwrite writes all of b at offset off of the regular file behind rc (a
// file's SyscallConn; the file's own offset is neither used nor moved).
func Pwrite(rc syscall.RawConn, b []byte, off int64) error {
	var werr error
	if err := rc.Control(func(fd uintptr) {
		for len(b) > 0 {
			n, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
			switch {
			case e == syscall.EINTR:
				continue
			case e != 0:
				werr = e
				return
			case n == 0:
				werr = io.ErrShortWrite
				return
			}
			b, off = b[n:], off+int64(n)
		}
	}); err != nil {
		return err
	}
	return werr
}
