package sandbox

import (
	"errors"
	"net"
	"time"
)

// A failed request reaches the plugin as the text of Go's error, and Go's
// network errors name the host's own side of the network: the local
// address and port of a connection (*net.OpError's Source, as in "read tcp
// 10.0.3.17:41234->93.184.215.14:443: connection reset by peer") and the
// DNS server asked (*net.DNSError's Server, as in "lookup x on
// 10.0.0.2:53: no such host"). Neither is the plugin's to know, and it can
// send what it learns to its allowed hosts. The egress dialer removes both
// where they arise, on its lookups and on the connections it returns, so
// every error built from them, however the HTTP client wraps it, is
// already without them.

// withoutLocalAddr is err without the local address it names, if it is a
// network operation's error.
func withoutLocalAddr(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Source != nil {
		c := *oe // the error may be shared: change a copy
		c.Source = nil
		return &c
	}
	return err
}

// withoutResolver is err without the DNS server it names, if it is a
// lookup's error.
func withoutResolver(err error) error {
	var de *net.DNSError
	if errors.As(err, &de) && de.Server != "" {
		c := *de // Go's resolver shares one error between concurrent lookups
		c.Server = ""
		return &c
	}
	return err
}

// localHidden is a connection whose errors do not name its local address.
type localHidden struct{ net.Conn }

func (c localHidden) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, withoutLocalAddr(err)
}

func (c localHidden) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, withoutLocalAddr(err)
}

func (c localHidden) Close() error { return withoutLocalAddr(c.Conn.Close()) }

func (c localHidden) SetDeadline(t time.Time) error {
	return withoutLocalAddr(c.Conn.SetDeadline(t))
}

func (c localHidden) SetReadDeadline(t time.Time) error {
	return withoutLocalAddr(c.Conn.SetReadDeadline(t))
}

func (c localHidden) SetWriteDeadline(t time.Time) error {
	return withoutLocalAddr(c.Conn.SetWriteDeadline(t))
}
