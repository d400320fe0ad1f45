// Command outsidecheck compares `toolhost serve` with extism go-sdk in
// process the way a check from outside this project would, in one run of
// one small program: first extism as its README shows (NewPlugin with the
// module's bytes and WASI, no timeout, no limits; one instance reused in a
// loop), then keep-alive Go HTTP clients calling the same module's tool on
// a running serve.
//
//	outsidecheck WASM EXPORT INPUT URL TOOL CLIENTS SECONDS
//
// The bearer token comes from $TOOLHOST_TOKEN. It prints one line:
//
//	extism_calls_per_s=… http_calls_per_s=… ratio=… clients=…
//
// make bench runs it as the echo/outside-check row. Unlike the
// extism-direct-alone row (a child of the bench's test binary), this
// process is as small as a checker's: extism go-sdk allocates ~90 objects
// per call, so its speed depends on how often a small heap is collected,
// and so does the HTTP client's.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "outsidecheck:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 7 {
		return fmt.Errorf("usage: outsidecheck WASM EXPORT INPUT URL TOOL CLIENTS SECONDS")
	}
	wasmPath, export, input, url, tool := args[0], args[1], []byte(args[2]), args[3], args[4]
	clients, err := strconv.Atoi(args[5])
	if err != nil || clients < 1 {
		return fmt.Errorf("CLIENTS %q is not a positive count", args[5])
	}
	secs, err := strconv.ParseFloat(args[6], 64)
	if err != nil || secs <= 0 {
		return fmt.Errorf("SECONDS %q is not a positive number", args[6])
	}
	dur := time.Duration(secs * float64(time.Second))

	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	ext, err := extismRate(wasm, export, input, dur)
	if err != nil {
		return fmt.Errorf("extism: %w", err)
	}
	h, err := httpRate(url+"/v1/tools/"+tool+"/call", os.Getenv("TOOLHOST_TOKEN"), input, clients, dur)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	fmt.Printf("extism_calls_per_s=%.0f http_calls_per_s=%.0f ratio=%.3f clients=%d\n", ext, h, h/ext, clients)
	return nil
}

// extismRate calls export with input on one reused instance for dur, after
// 1,000 calls of warm-up, and returns calls per second.
func extismRate(wasm []byte, export string, input []byte, dur time.Duration) (float64, error) {
	ctx := context.Background()
	p, err := extism.NewPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}}, extism.PluginConfig{EnableWasi: true}, nil)
	if err != nil {
		return 0, err
	}
	defer p.Close(ctx)
	call := func() error {
		rc, out, err := p.Call(export, input)
		if err == nil && (rc != 0 || len(out) == 0) {
			err = fmt.Errorf("rc %d, %d bytes out", rc, len(out))
		}
		return err
	}
	for range 1000 {
		if err := call(); err != nil {
			return 0, err
		}
	}
	n := 0
	start := time.Now()
	for time.Since(start) < dur {
		for range 100 {
			if err := call(); err != nil {
				return 0, err
			}
		}
		n += 100
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// httpRate has clients goroutines call url with {"arguments":INPUT} for
// dur, after 20 calls each of warm-up, and returns answered calls per
// second; any failed call is an error.
func httpRate(url, token string, input []byte, clients int, dur time.Duration) (float64, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	body := append(append([]byte(`{"arguments":`), input...), '}')
	call := func() error {
		req, err := http.NewRequest("POST", url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
		}
		return nil
	}
	var n atomic.Int64
	var first atomic.Value
	load := func(until func() bool) {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for until() {
					if err := call(); err != nil {
						first.CompareAndSwap(nil, err)
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
	}
	var warm atomic.Int64
	load(func() bool { return warm.Add(1) <= int64(20*clients) })
	if err, _ := first.Load().(error); err != nil {
		return 0, err
	}
	n.Store(0)
	start := time.Now()
	load(func() bool { return time.Since(start) < dur })
	elapsed := time.Since(start)
	if err, _ := first.Load().(error); err != nil {
		return 0, err
	}
	return float64(n.Load()) / elapsed.Seconds(), nil
}
