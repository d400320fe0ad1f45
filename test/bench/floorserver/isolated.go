package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"

	extism "github.com/extism/go-sdk"
)

// childEnv marks the process as a child that runs the module.
const childEnv = "FLOORSERVER_CHILD"

// children is a fixed set of child processes; a call takes a free one.
type children struct {
	free chan *child
}

type child struct {
	in  io.WriteCloser
	out *bufio.Reader
}

// startChildren starts as many children as toolhost starts workers on
// this machine (twice the CPUs, at least 3), each with wasm loaded.
func startChildren(wasm, export string) (*children, error) {
	n := max(3, 2*runtime.NumCPU())
	c := &children{free: make(chan *child, n)}
	for range n {
		cmd := exec.Command(os.Args[0], wasm, export)
		cmd.Env = append(os.Environ(), childEnv+"=1", "GOMAXPROCS=1", "GOGC=off", "GOMEMLIMIT=48MiB")
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		c.free <- &child{in: in, out: bufio.NewReader(out)}
	}
	return c, nil
}

// call runs the module on input in a free child and returns its output.
func (c *children) call(input []byte) ([]byte, error) {
	k := <-c.free
	defer func() { c.free <- k }()
	if err := writeMsg(k.in, input); err != nil {
		return nil, err
	}
	return readMsg(k.out)
}

// A message is its length (4 bytes, little-endian), then its bytes.
func writeMsg(w io.Writer, b []byte) error {
	m := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err := w.Write(append(m, b...))
	return err
}

func readMsg(r *bufio.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.LittleEndian.Uint32(h[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

// runChild answers messages on stdin with export's output, one instance
// reused for every call, until stdin ends; with wasmPath "-", with the
// messages themselves, running nothing (the process boundary alone).
func runChild(wasmPath, export string) error {
	if wasmPath == "-" {
		return answer(func(in []byte) ([]byte, error) { return in, nil })
	}
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	ctx := context.Background()
	p, err := extism.NewPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}}, extism.PluginConfig{EnableWasi: true}, nil)
	if err != nil {
		return err
	}
	defer p.Close(ctx)
	return answer(func(in []byte) ([]byte, error) {
		rc, out, err := p.Call(export, in)
		if err == nil && rc != 0 {
			err = fmt.Errorf("%s returned %d", export, rc)
		}
		return out, err
	})
}

// answer replies to each message on stdin with what call makes of it,
// until stdin ends.
func answer(call func([]byte) ([]byte, error)) error {
	r := bufio.NewReader(os.Stdin)
	for {
		in, err := readMsg(r)
		if err != nil {
			return nil // the server went away
		}
		out, err := call(in)
		if err != nil {
			return err
		}
		if err := writeMsg(os.Stdout, out); err != nil {
			return err
		}
	}
}
