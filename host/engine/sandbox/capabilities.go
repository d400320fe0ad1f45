package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
	"sync/atomic"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/toolhost/toolhost/host/toolerr"
)

// HostModule is the import module of toolhost's own host functions.
//
//	toolhost.http_fetch(request i64) -> i64
//
// Both values are offsets of Extism memory blocks (the guest allocates the
// request with the kernel's alloc, e.g. go-pdk's AllocateBytes; the guest
// frees both blocks). The request is JSON
//
//	{"method","url","headers":{name:value},"body","max_body_bytes","secrets":[name]}
//
// (method defaults to GET; max_body_bytes, optional, cuts the body there
// instead of failing at MaxFetchResponseBytes; secrets, optional, names
// secrets of the manifest the host adds as their headers, only where they
// are bound, see engine.Spec.Secrets). The response is JSON
//
//	{"status","url","headers","body","body_encoding","truncated"}
//
// (url after redirects; header names lowercased; body_encoding "base64"
// when the body is not UTF-8) or {"error": "..."}; 0 only if not even an
// error fits in the plugin's memory. Every request, and every redirect hop,
// must be to a host in the plugin's signed allowed_hosts, and every address
// connected to must be outside the private, loopback, link-local and
// reserved ranges unless the operator granted them. A tool call may make
// MaxFetchesPerCall requests. A denied request answers
// {"error": "permission denied: …"} and, if the call then fails, the
// call's error code is permission_denied. A garbage offset answers
// {"error": "bad request: …"}: the host never reads outside a live block.
const HostModule = "toolhost"

func init() {
	providedImports[HostModule] = set("http_fetch", "progress")
}

type callStateKey struct{}

// callState is per-call bookkeeping shared with host functions.
type callState struct {
	denied  atomic.Value // string: the first permission denial
	fetches atomic.Int32 // requests made so far
}

func stateOf(ctx context.Context) *callState {
	s, _ := ctx.Value(callStateKey{}).(*callState)
	return s
}

// maxFetchRequestJSON bounds the request document: the body plus room for
// the URL, headers and JSON escaping.
const maxFetchRequestJSON = MaxFetchRequestBytes + 64<<10

func hostFunctions(eg egress) []extism.HostFunction {
	fetch := extism.NewHostFunctionWithStack("http_fetch", func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		stack[0] = httpFetch(ctx, p, eg, stack[0])
	}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
	fetch.SetNamespace(HostModule)
	return []extism.HostFunction{fetch, progressHostFunction()}
}

// httpFetch serves one toolhost.http_fetch call: offset is whatever the
// guest passed, so every step checks before it trusts.
func httpFetch(ctx context.Context, p *extism.CurrentPlugin, eg egress, offset uint64) uint64 {
	state := stateOf(ctx)
	raw, errMsg := readRequest(p, offset)
	if errMsg != "" {
		return respond(p, fetchResponse{Error: errMsg})
	}
	var req fetchRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // a misspelt field must not be silently ignored
	if err := dec.Decode(&req); err != nil {
		return respond(p, fetchResponse{Error: "bad request: " + err.Error()})
	}
	if state != nil && state.fetches.Add(1) > MaxFetchesPerCall {
		return respond(p, fetchResponse{Error: fmt.Sprintf("too many requests: a tool call may make at most %d", MaxFetchesPerCall)})
	}
	resp, err := eg.fetch(ctx, req)
	if err != nil {
		if errors.Is(err, errDenied) && state != nil {
			state.denied.CompareAndSwap(nil, err.Error())
		}
		return respond(p, fetchResponse{Error: err.Error()})
	}
	return respond(p, resp)
}

// readRequest copies the request block at offset out of Extism memory.
// The kernel's length() answers 0 for anything that is not the start of a
// live block, so a garbage offset is a clean error.
func readRequest(p *extism.CurrentPlugin, offset uint64) ([]byte, string) {
	const notABlock = "bad request: the offset does not point at an Extism memory block"
	if offset == 0 || offset > math.MaxUint32 {
		return nil, notABlock
	}
	n, err := p.Length(offset)
	if err != nil || n == 0 {
		return nil, notABlock
	}
	if n > maxFetchRequestJSON {
		return nil, fmt.Sprintf("bad request: %d bytes, the limit is %d", n, maxFetchRequestJSON)
	}
	raw, err := p.ReadBytes(offset)
	if err != nil || len(raw) == 0 {
		return nil, notABlock
	}
	return raw, ""
}

// respond writes r into Extism memory and returns its offset. When the
// plugin's memory cannot hold it, the answer is a short error instead; 0
// only if not even that fits.
func respond(p *extism.CurrentPlugin, r fetchResponse) uint64 {
	data, _ := json.Marshal(r)
	off, err := p.WriteBytes(data)
	if err == nil {
		return off
	}
	if r.Error == "" {
		data, _ = json.Marshal(fetchResponse{Error: fmt.Sprintf("the response (%d bytes as JSON) does not fit in the plugin's memory: raise limits.memory_pages or ask for less with max_body_bytes", len(data))})
		if off, err := p.WriteBytes(data); err == nil {
			return off
		}
	}
	return 0
}

// readOnlyFiles mounts each granted host directory read-only at its guest
// path. os.Root refuses paths that escape the directory, through ".." or
// through symlinks; grantFS exposes regular files and directories only, and
// files without any write method.
type readOnlyFiles struct {
	roots []*os.Root
	cfg   wazero.FSConfig
}

func openGrants(paths map[string]string) (*readOnlyFiles, error) {
	f := &readOnlyFiles{cfg: wazero.NewFSConfig()}
	for hostPath, guestPath := range paths {
		root, err := os.OpenRoot(hostPath)
		if err != nil {
			f.close()
			return nil, toolerr.Errorf(toolerr.CodePermissionDenied, "granted path %s cannot be opened: %v", hostPath, err)
		}
		f.roots = append(f.roots, root)
		f.cfg = f.cfg.WithFSMount(grantFS{root}, guestPath)
	}
	return f, nil
}

func (f *readOnlyFiles) close() {
	for _, r := range f.roots {
		r.Close()
	}
}

// grantFS is the fs.FS a plugin sees for one grant. wazero opens every
// file and directory through Open (its stat is open + fstat).
type grantFS struct{ root *os.Root }

func (g grantFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	// Refuse FIFOs, sockets and devices before opening: open(2) on a FIFO
	// blocks the host thread, out of reach of the call's deadline.
	fi, err := g.root.Stat(name)
	if err != nil {
		return nil, refusal("open", name, err)
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	f, err := g.root.Open(name)
	if err != nil {
		return nil, refusal("open", name, err)
	}
	return readOnlyFile{f}, nil
}

// refusal maps os.Root's escape error (not exported; wazero would report
// it as EIO) to fs.ErrPermission, which reaches the guest as EPERM.
func refusal(op, name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrInvalid) {
		return err
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	}
	return err
}

// readOnlyFile is an *os.File opened read-only, with the write methods
// hidden as well: wazero writes only through io.Writer / io.WriterAt.
type readOnlyFile struct{ f *os.File }

func (r readOnlyFile) Stat() (fs.FileInfo, error)                { return r.f.Stat() }
func (r readOnlyFile) Read(p []byte) (int, error)                { return r.f.Read(p) }
func (r readOnlyFile) ReadAt(p []byte, off int64) (int, error)   { return r.f.ReadAt(p, off) }
func (r readOnlyFile) Seek(off int64, whence int) (int64, error) { return r.f.Seek(off, whence) }
func (r readOnlyFile) ReadDir(n int) ([]fs.DirEntry, error)      { return r.f.ReadDir(n) }
func (r readOnlyFile) Readdir(n int) ([]fs.FileInfo, error)      { return r.f.Readdir(n) }
func (r readOnlyFile) Close() error                              { return r.f.Close() }

// deniedError returns the call's permission denial as an error, if any.
func deniedError(s *callState) *toolerr.Error {
	if v, _ := s.denied.Load().(string); v != "" {
		return toolerr.Errorf(toolerr.CodePermissionDenied, "%s", strings.TrimPrefix(v, errDenied.Error()+": "))
	}
	return nil
}
