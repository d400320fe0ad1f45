// Command fetch is a toolhost sample plugin: fetch a URL from a host its
// manifest allows.
//
// It reaches the network only through the host function toolhost.http_fetch
// (extism's own http_request is not provided by toolhost). The host checks
// the URL, every redirect hop and every address it connects to against the
// signed allowed_hosts and its private-address policy; this plugin only
// shapes the request and the answer.
//
// Built as a WASI reactor (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/extism/go-pdk"

	"github.com/toolhost/toolhost/sample-plugins/internal/guest"
)

// httpFetch is toolhost.http_fetch: it takes the offset of an Extism memory
// block holding the request JSON and returns the offset of a block holding
// the response JSON (see host/engine/sandbox/capabilities.go for the ABI).
//
//go:wasmimport toolhost http_fetch
func httpFetch(request uint64) uint64

// maxBodyBytes is what the tool returns to a model; the host cuts the body
// there (truncated: true) instead of moving megabytes into the plugin.
const maxBodyBytes = 128 << 10

type fetchArgs struct {
	URL     *string           `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Secrets []string          `json:"secrets"`
}

// request and response mirror the host's JSON.
type request struct {
	Method       string            `json:"method,omitempty"`
	URL          string            `json:"url"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         string            `json:"body,omitempty"`
	MaxBodyBytes int64             `json:"max_body_bytes,omitempty"`
	// Secrets names secrets the host adds as headers; their values never
	// reach this plugin.
	Secrets []string `json:"secrets,omitempty"`
}

type response struct {
	Status       int               `json:"status"`
	URL          string            `json:"url"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body"`
	BodyEncoding string            `json:"body_encoding"`
	Truncated    bool              `json:"truncated"`
	Error        string            `json:"error"`
}

type fetchResult struct {
	Status       int    `json:"status"`
	URL          string `json:"url"`
	ContentType  string `json:"content_type"`
	Body         string `json:"body"`
	BodyEncoding string `json:"body_encoding"` // "utf-8" or "base64"
	Truncated    bool   `json:"truncated"`
}

//go:wasmexport fetch_url
func fetchURL() int32 {
	var args fetchArgs
	if err := guest.DecodeArgs(pdk.Input(), &args); err != nil {
		return guest.Fail(err)
	}
	if args.URL == nil || *args.URL == "" {
		return guest.Fail(errors.New(`missing required argument "url": an http:// or https:// URL on a host this plugin is allowed to reach`))
	}
	resp, err := send(request{
		Method: strings.ToUpper(args.Method), URL: *args.URL, Headers: args.Headers, Body: args.Body,
		MaxBodyBytes: maxBodyBytes, Secrets: args.Secrets,
	})
	if err != nil {
		return guest.Fail(err)
	}
	if resp.Error != "" {
		return guest.Fail(fmt.Errorf("fetching %s failed: %s", guest.Clip(*args.URL), resp.Error))
	}
	res := fetchResult{
		Status: resp.Status, URL: resp.URL, ContentType: resp.Headers["content-type"],
		Body: resp.Body, BodyEncoding: "utf-8", Truncated: resp.Truncated,
	}
	if resp.BodyEncoding != "" {
		res.BodyEncoding = resp.BodyEncoding
	}
	return guest.Succeed(res)
}

// send passes req to the host and decodes its answer.
func send(req request) (response, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return response{}, err
	}
	in := pdk.AllocateBytes(data)
	defer in.Free()
	off := httpFetch(in.Offset())
	if off == 0 {
		return response{}, errors.New("the host returned no response (out of memory?)")
	}
	out := pdk.FindMemory(off)
	defer out.Free()
	var resp response
	if err := json.Unmarshal(out.ReadBytes(), &resp); err != nil {
		return response{}, fmt.Errorf("the host's response is not JSON: %v", err)
	}
	return resp, nil
}

func main() {}
