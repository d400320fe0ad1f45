// Command guard is a toolhost sample policy plugin. Its hooks run around
// other plugins' tool calls:
//
//   - check_fetch (before_call, fetch_url): denies URLs whose host is on
//     the block list below, drops credential headers (Authorization,
//     Cookie) and upgrades http:// to https:// by rewriting the arguments
//     (the host validates rewritten arguments against fetch_url's schema
//     again).
//   - redact (after_call, read_file): replaces e-mail addresses anywhere in
//     the result with "[redacted e-mail]".
//
// Its one tool, guard_rules, lists the block list. The list is compiled
// into the wasm, so it is covered by the curator's signature.
//
// The manifest opts in to reuse_instances: a hook runs on every matching
// call, and a fresh Go instance per call (runtime start, regexp compile)
// costs tens of milliseconds where a reused one costs well under one. The
// hooks keep nothing from one call to the next (the only package state is
// the block list and the compiled pattern), so reuse leaks nothing.
//
// Built as a WASI reactor (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared).
package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/extism/go-pdk"

	"github.com/toolhost/toolhost/sample-plugins/internal/guest"
)

// blockedHosts are refused, with their subdomains.
var blockedHosts = []string{"blocked.example.com", "tracker.example.net"}

var email = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)

type beforeCall struct {
	Tool      string          `json:"tool"`
	Plugin    string          `json:"plugin"`
	Arguments json.RawMessage `json:"arguments"`
	Entry     string          `json:"entry"`
}

type afterCall struct {
	Tool      string          `json:"tool"`
	Plugin    string          `json:"plugin"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
}

func blocked(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, b := range blockedHosts {
		if host == b || strings.HasSuffix(host, "."+b) {
			return true
		}
	}
	return false
}

//go:wasmexport check_fetch
func checkFetch() int32 {
	var in beforeCall
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return guest.Fail(fmt.Errorf("guard: bad hook input: %v", err))
	}
	var args map[string]any
	if err := json.Unmarshal(in.Arguments, &args); err != nil {
		return guest.Fail(fmt.Errorf("guard: arguments are not an object: %v", err))
	}
	raw, _ := args["url"].(string)
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return guest.Succeed(map[string]any{"action": "deny", "reason": fmt.Sprintf("guard cannot read the host of %q; pass an absolute http(s) URL", guest.Clip(raw))})
	}
	if blocked(u.Hostname()) {
		return guest.Succeed(map[string]any{"action": "deny", "reason": fmt.Sprintf("%s is on the guard's block list; fetch another host", u.Hostname())})
	}
	rewritten := false
	if h, ok := args["headers"].(map[string]any); ok {
		for k := range h {
			if strings.EqualFold(k, "authorization") || strings.EqualFold(k, "cookie") {
				delete(h, k)
				rewritten = true
			}
		}
	}
	if strings.EqualFold(u.Scheme, "http") {
		args["url"] = "https" + raw[len("http"):]
		rewritten = true
	}
	if !rewritten {
		return guest.Succeed(map[string]any{"action": "allow"})
	}
	return guest.Succeed(map[string]any{"action": "rewrite", "arguments": args})
}

//go:wasmexport redact
func redact() int32 {
	var in afterCall
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return guest.Fail(fmt.Errorf("guard: bad hook input: %v", err))
	}
	var result any
	if err := json.Unmarshal(in.Result, &result); err != nil {
		return guest.Fail(fmt.Errorf("guard: result is not JSON: %v", err))
	}
	return guest.Succeed(map[string]any{"result": redactValue(result)})
}

func redactValue(v any) any {
	switch t := v.(type) {
	case string:
		return email.ReplaceAllString(t, "[redacted e-mail]")
	case map[string]any:
		for k, c := range t {
			t[k] = redactValue(c)
		}
	case []any:
		for i, c := range t {
			t[i] = redactValue(c)
		}
	}
	return v
}

//go:wasmexport guard_rules
func guardRules() int32 {
	return guest.Succeed(map[string]any{
		"blocked_hosts": blockedHosts,
		"redacts":       "e-mail addresses in read_file results",
	})
}

func main() {}
