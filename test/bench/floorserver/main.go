// Command floorserver is the floor under toolhost-http: a Go HTTP server
// that answers POST /v1/tools/{name}/call with {"result": <arguments>}
// after making one 300-byte record per call durable, and does nothing
// else — no token, no validation, no sandbox, no hash chain. The record
// is written to a preallocated file and fdatasync'd, shared by the calls
// that end together the way toolhost's audit log shares it (the one that
// leads a sync first waits, at most 500 µs, while other calls are in
// flight). What the contract ("fsync'd before the answer") and a Go HTTP
// exchange cost together on a machine, before toolhost does any work.
//
//	floorserver DIR [WASM EXPORT]
//
// With WASM and EXPORT it also isolates, the plainest way: each call's
// arguments go over a pipe to one of a few child processes (as many as
// toolhost starts workers), which runs EXPORT of the module with extism
// go-sdk — one instance per child, reused, with the children's runtime
// set as toolhost's workers' (one P, a 48 MiB collection limit) — and
// answers with its output. The floor under any server that keeps a plugin
// out of its own process and the call durable, still with no checks. With
// WASM "-" (EXPORT is ignored) the children run nothing and answer with
// the arguments: the process boundary alone.
//
// It prints "serving http://ADDR" once it listens on a loopback port.
// make bench runs the outside check against it (echo/outside-check-floor,
// echo/outside-check-floor-hop, echo/outside-check-floor-isolated).
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	fileSize   = 4 << 20
	recordSize = 300
	gatherMax  = 500 * time.Microsecond
)

// durable is a group-committed append-only ring of records.
type durable struct {
	f        *os.File
	mu       sync.Mutex // guards buf, seq, syncing
	buf      []byte
	seq      uint64
	syncing  chan struct{} // closed when the sync in progress ends
	synced   atomic.Uint64
	inFlight atomic.Int64
	off      int64 // used by the sync leader only
}

// add makes one record durable, then returns.
func (d *durable) add(rec []byte) error {
	d.mu.Lock()
	d.buf = append(d.buf, rec...)
	d.seq++
	mine := d.seq
	d.mu.Unlock()
	d.inFlight.Add(-1)
	for d.synced.Load() < mine {
		d.mu.Lock()
		if ch := d.syncing; ch != nil {
			d.mu.Unlock()
			<-ch
			continue
		}
		ch := make(chan struct{})
		d.syncing = ch
		d.mu.Unlock()
		err := d.lead()
		d.mu.Lock()
		d.syncing = nil
		d.mu.Unlock()
		close(ch)
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *durable) lead() error {
	for until := time.Now().Add(gatherMax); d.inFlight.Load() > 0 && time.Now().Before(until); {
		time.Sleep(20 * time.Microsecond)
	}
	d.mu.Lock()
	b, upto := d.buf, d.seq
	d.buf = nil
	d.mu.Unlock()
	if d.off+int64(len(b)) > fileSize {
		d.off = 0
	}
	if _, err := d.f.WriteAt(b, d.off); err != nil {
		return err
	}
	d.off += int64(len(b))
	if err := unix.Fdatasync(int(d.f.Fd())); err != nil {
		return err
	}
	d.synced.Store(upto)
	return nil
}

func main() {
	if os.Getenv(childEnv) != "" {
		if err := runChild(os.Args[1], os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "floorserver child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "floorserver:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 && len(os.Args) != 4 {
		return errors.New("usage: floorserver DIR [WASM EXPORT]")
	}
	var kids *children
	if len(os.Args) == 4 {
		var err error
		if kids, err = startChildren(os.Args[2], os.Args[3]); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(os.Args[1], "floor.wal"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(make([]byte, fileSize)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	d := &durable{f: f}
	rec := make([]byte, recordSize)
	for i := range rec {
		rec[i] = 'r'
	}
	rec[recordSize-1] = '\n'
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tools/{name}/call", func(w http.ResponseWriter, r *http.Request) {
		d.inFlight.Add(1)
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			d.inFlight.Add(-1)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// {"arguments":X} becomes {"result":X}, or {"result":Y} where Y
		// is what the module made of X.
		const prefix = `{"arguments":`
		if len(body) < len(prefix)+2 || string(body[:len(prefix)]) != prefix || body[len(body)-1] != '}' {
			d.inFlight.Add(-1)
			http.Error(w, "want {\"arguments\":…}", http.StatusBadRequest)
			return
		}
		result := body[len(prefix) : len(body)-1]
		if kids != nil {
			if result, err = kids.call(result); err != nil {
				d.inFlight.Add(-1)
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		if err := d.add(rec); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(append([]byte(`{"result":`), result...), '}'))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("serving http://%s\n", ln.Addr())
	return http.Serve(ln, mux)
}
