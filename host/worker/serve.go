package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/toolhost/toolhost/host/sandbox"
	"github.com/toolhost/toolhost/plugin"
)

// Serve is the worker side: it reads requests from r, runs them with an
// in-process engine and writes replies to w, one request at a time, until r
// ends. It is what `toolhost sandbox-worker` runs.
func Serve(ctx context.Context, r io.Reader, w io.Writer, cacheDir string) error {
	// The supervisor bounds this process from outside (RSS watchdog, address
	// space limit); the soft limit makes the Go heap give memory back early.
	debug.SetMemoryLimit(256 << 20)
	engine, err := sandbox.NewInProcess(cacheDir)
	if err != nil {
		return err
	}
	defer engine.Close(ctx)
	modules := map[string]sandbox.Module{}
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	reply := func(e *sandbox.Error, body []byte) error {
		var h replyHeader
		if e != nil {
			h = replyHeader{Code: string(e.Code), Message: e.Message}
		}
		if err := writeFrame(bw, kindReply, h, body); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := writeFrame(bw, kindReady, struct{}{}, nil); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	for {
		f, err := readFrame(br, plugin.MaxWasmBytes+plugin.MaxOutputBytes)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch f.kind {
		case kindLoad:
			var h loadHeader
			if err := json.Unmarshal(f.header, &h); err != nil {
				return fmt.Errorf("worker: bad load header: %w", err)
			}
			if old := modules[h.Key]; old != nil {
				old.Close(ctx)
				delete(modules, h.Key)
			}
			mod, err := engine.Compile(ctx, specFromLoad(h, f.body))
			if err != nil {
				if err := reply(asError(err), nil); err != nil {
					return err
				}
				continue
			}
			modules[h.Key] = mod
			if err := reply(nil, nil); err != nil {
				return err
			}
		case kindCall:
			var h callHeader
			if err := json.Unmarshal(f.header, &h); err != nil {
				return fmt.Errorf("worker: bad call header: %w", err)
			}
			mod := modules[h.Key]
			if mod == nil {
				if err := reply(sandbox.Errorf(sandbox.CodeInternal, "module not loaded in worker"), nil); err != nil {
					return err
				}
				continue
			}
			out, err := mod.Call(ctx, h.Export, f.body)
			if err != nil {
				out = nil
			}
			if err := reply(asErrorOrNil(err), out); err != nil {
				return err
			}
		case kindUnload:
			var h unloadHeader
			if err := json.Unmarshal(f.header, &h); err == nil {
				if m := modules[h.Key]; m != nil {
					m.Close(ctx)
					delete(modules, h.Key)
				}
			}
			if err := reply(nil, nil); err != nil {
				return err
			}
		default:
			return fmt.Errorf("worker: unknown frame kind %d", f.kind)
		}
	}
}

func specFromLoad(h loadHeader, wasm []byte) sandbox.Spec {
	return sandbox.Spec{
		Key: h.Key, Name: h.Name, Wasm: wasm, Exports: h.Exports, AllowPrivateNetwork: h.Private,
		Limits:      plugin.Limits{MemoryPages: h.MemoryPages, TimeoutMS: h.TimeoutMS, MaxOutputBytes: h.MaxOutput},
		Permissions: plugin.Permissions{AllowedHosts: h.Hosts, AllowedPaths: h.Paths},
	}
}

func asErrorOrNil(err error) *sandbox.Error {
	if err == nil {
		return nil
	}
	return asError(err)
}

func asError(err error) *sandbox.Error {
	var se *sandbox.Error
	if errors.As(err, &se) {
		return se
	}
	return sandbox.Errorf(sandbox.CodeInternal, "%v", err)
}

// Main runs a worker on stdin/stdout and returns the process exit code.
func Main(cacheDir string) int {
	if err := Serve(context.Background(), os.Stdin, os.Stdout, cacheDir); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox worker: %v\n", err)
		return 1
	}
	return 0
}
