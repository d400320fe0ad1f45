package worker

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// rawPipe reads and writes a non-blocking pipe with raw system calls,
// waiting for it in the runtime's poller when it is empty (or full).
//
// Why: a plain read or write enters the scheduler's system-call path,
// which wakes the runtime's monitor thread (sysmon) whenever the process
// was idle; sysmon then polls every 20 µs for the next millisecond. A
// worker goes idle between calls, so that was several timer wakeups and
// context switches per call — measured at ~20% of a worker's CPU time.
// A read or write of a non-blocking pipe never blocks, so it needs none
// of that.
type rawPipe struct {
	f  *os.File
	rc syscall.RawConn
}

// newRawPipe wraps f, which must be in non-blocking mode (os.Pipe's ends
// are; a descriptor inherited from a parent must be set so before
// os.NewFile).
func newRawPipe(f *os.File) (*rawPipe, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &rawPipe{f: f, rc: rc}, nil
}

func (p *rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if rerr := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				n = int(r)
				if n == 0 {
					err = io.EOF
				}
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller, then try again
			default:
				err = &os.PathError{Op: "read", Path: p.f.Name(), Err: e}
				return true
			}
		}
	}); rerr != nil && err == nil {
		err = rerr
	}
	return n, err
}

func (p *rawPipe) Write(b []byte) (int, error) {
	var n int
	var err error
	if werr := p.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // full: wait in the poller, then go on
			default:
				err = &os.PathError{Op: "write", Path: p.f.Name(), Err: e}
				return true
			}
		}
		return true
	}); werr != nil && err == nil {
		err = werr
	}
	return n, err
}

func (p *rawPipe) Close() error { return p.f.Close() }
