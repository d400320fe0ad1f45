package control_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/api/control"
)

// A host that goes away while handling a change leaves the client unsure
// whether the change took effect: the error says so and how to find out,
// rather than inviting a blind retry.
func TestVanishedHostLeavesTheChangeUnknown(t *testing.T) {
	path := filepath.Join(t.TempDir(), control.SocketName)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"result":"pong"}`))
			return
		}
		// The process dies mid-request: the connection ends unanswered.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	c, err := control.Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Remove(context.Background(), "notes")
	if err == nil {
		t.Fatal("Remove succeeded against a host that went away")
	}
	for _, want := range []string{"did not answer", "whether it took effect is unknown", "toolhost plugin list", "toolhost serve"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
