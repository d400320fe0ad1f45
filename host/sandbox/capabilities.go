package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
)

// HostModule is the import module of toolhost's own host functions.
//
//	toolhost.http_fetch(request: extism memory offset) -> response offset
//
// The request is JSON {"method","url","headers","body"}; the response is
// JSON {"status","url","headers","body"} or {"error"}. Every request, and
// every redirect hop, must be to a host in the plugin's signed
// allowed_hosts, and every address connected to must be outside the
// private, loopback, link-local and reserved ranges unless the operator
// granted them. A denied request answers {"error": "permission denied: …"}
// and, if the call then fails, the call's error code is permission_denied.
const HostModule = "toolhost"

func init() {
	providedImports[HostModule] = set("http_fetch")
}

type callStateKey struct{}

// callState is per-call bookkeeping shared with host functions.
type callState struct {
	denied atomic.Value // string: the first permission denial
}

func stateOf(ctx context.Context) *callState {
	s, _ := ctx.Value(callStateKey{}).(*callState)
	return s
}

func hostFunctions(eg egress) []extism.HostFunction {
	fetch := extism.NewHostFunctionWithStack("http_fetch", func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		respond := func(r fetchResponse) {
			data, _ := json.Marshal(r)
			off, err := p.WriteBytes(data)
			if err != nil {
				off = 0
			}
			stack[0] = off
		}
		raw, err := p.ReadBytes(stack[0])
		if err != nil || len(raw) == 0 {
			respond(fetchResponse{Error: "bad request: the offset does not point at an Extism memory block"})
			return
		}
		if len(raw) > MaxFetchRequestBytes+64<<10 {
			respond(fetchResponse{Error: "bad request: too large"})
			return
		}
		var req fetchRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			respond(fetchResponse{Error: "bad request: " + err.Error()})
			return
		}
		resp, err := eg.fetch(ctx, req)
		if err != nil {
			if errors.Is(err, errDenied) {
				if s := stateOf(ctx); s != nil {
					s.denied.CompareAndSwap(nil, err.Error())
				}
			}
			respond(fetchResponse{Error: err.Error()})
			return
		}
		respond(resp)
	}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
	fetch.SetNamespace(HostModule)
	return []extism.HostFunction{fetch}
}

// readOnlyFiles mounts each granted host directory read-only at its guest
// path. os.Root refuses paths that escape the directory, through ".." or
// through symlinks; the mount itself is read-only.
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
			return nil, Errorf(CodePermissionDenied, "granted path %s cannot be opened: %v", hostPath, err)
		}
		f.roots = append(f.roots, root)
		f.cfg = f.cfg.WithFSMount(root.FS(), guestPath)
	}
	return f, nil
}

func (f *readOnlyFiles) close() {
	for _, r := range f.roots {
		r.Close()
	}
}

// deniedError returns the call's permission denial as an error, if any.
func deniedError(s *callState) *Error {
	if v, _ := s.denied.Load().(string); v != "" {
		return Errorf(CodePermissionDenied, "%s", fmt.Sprint(v))
	}
	return nil
}
