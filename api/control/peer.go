package control

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// ErrUntrustedSocket means the control socket, or the process answering
// on it, does not belong to this user (or root): another local user may be
// impersonating the host, and nothing is sent to it.
var ErrUntrustedSocket = errors.New("control: the control socket is not this user's")

// peerUID returns the uid of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, credErr
	}
	return int(cred.Uid), nil
}

// trustedUID reports whether uid may run the host this user talks to.
func trustedUID(uid int) bool { return uid == os.Geteuid() || uid == 0 }

// checkSocketFile refuses a socket file another user owns or that group or
// others can write.
func checkSocketFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoServer, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%w: %s is not a socket; remove it", ErrUntrustedSocket, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && !trustedUID(int(st.Uid)) {
		return fmt.Errorf("%w: %s is owned by uid %d, not by you (uid %d); remove it and check who can write its directory", ErrUntrustedSocket, path, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s can be written by group or others (mode %04o); remove it and restart `toolhost serve`", ErrUntrustedSocket, path, fi.Mode().Perm())
	}
	return nil
}

// dialTrusted connects to path and checks the peer's credentials.
func dialTrusted(c net.Conn, path string) (net.Conn, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%w: %s is not a unix socket", ErrUntrustedSocket, path)
	}
	uid, err := peerUID(uc)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: cannot read the credentials of the process serving %s: %v", ErrUntrustedSocket, path, err)
	}
	if !trustedUID(uid) {
		c.Close()
		return nil, fmt.Errorf("%w: the process serving %s runs as uid %d, not as you (uid %d) or root; refusing to talk to it — remove the socket and check who can write its directory", ErrUntrustedSocket, path, uid, os.Geteuid())
	}
	return c, nil
}
