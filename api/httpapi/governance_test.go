package httpapi

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/internal/testplugins"
)

// governedHost is a real host (in-process sandbox) with the guard policy
// plugin, fetch and notes installed, its Governor and an audit log.
type governedHost struct {
	h   *host.Host
	gov *govern.Governor
	log *audit.Log
}

func newGovernedHost(t *testing.T) *governedHost {
	t.Helper()
	g := &governedHost{}
	l, err := audit.Open(filepath.Join(t.TempDir(), audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	rec := &audit.Recorder{Log: l}
	g.log = l
	// The Governor needs the store, which newRealHostWith opens; it is set
	// on the host once both exist.
	g.h = newRealHostWith(t, host.Options{Observers: []host.CallObserver{rec}})
	g.gov, err = govern.New(govern.Options{Store: g.h.Store(), Hooks: g.h.PolicyHooks, ApprovalTimeout: time.Minute, Audit: rec})
	if err != nil {
		t.Fatal(err)
	}
	g.h.SetGovernor(g.gov)
	for _, name := range []string{"guard", "fetch", "notes"} {
		if _, err := g.h.Install(context.Background(), testplugins.Bundle(t, name), host.InstallOptions{}); err != nil {
			t.Fatalf("install %s: %v", name, err)
		}
		if err := rec.Change("install", name, "", "test"); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// waitApproval returns the first pending approval.
func waitApproval(t *testing.T, gov *govern.Governor) govern.Pending {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ps := gov.Approvals().List(); len(ps) > 0 {
			return ps[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no call waits for approval")
	return govern.Pending{}
}

func TestGovernanceEndToEnd(t *testing.T) {
	g := newGovernedHost(t)
	_, srv := serve(t, g.h, Options{Approvals: g.gov.Approvals(), AuditFile: g.log.Path()})
	ctx := context.Background()

	// ?format=mcp carries title, annotations and the output schema.
	list := string(do(t, srv, "GET", "/v1/tools?format=mcp", "", "").body)
	mustContain(t, list, `"name":"delete_note","title":"Delete a note"`, `"outputSchema":{"type":"object"`,
		`"annotations":{"title":"Delete a note","readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false}`)

	// A hook's deny reaches an HTTP and an MCP caller as denied, with its reason.
	r := do(t, srv, "POST", "/v1/tools/fetch_url/call", `{"arguments":{"url":"https://blocked.example.com/a"}}`, "")
	if r.status != 403 || r.errorCode() != "denied" || !strings.Contains(string(r.body), "hook:guard/check_fetch denied fetch_url: blocked.example.com is on the guard's block list") {
		t.Fatalf("HTTP hook deny: %d %s", r.status, r.body)
	}
	cs := connectMCP(t, srv, nil)
	res, err := cs.CallTool(ctx, mcpCall("fetch_url", map[string]any{"url": "https://tracker.example.net/"}))
	if err != nil || !res.IsError || !strings.HasPrefix(textOf(res), "denied: hook:guard/check_fetch denied fetch_url: tracker.example.net is on the guard's block list") {
		t.Fatalf("MCP hook deny: %v %+v", err, textOf(res))
	}

	// A rewrite is validated as the hook answers: http:// -> https://
	// makes a URL of the schema's maximum length one character too long,
	// and the hook that did it denies the call (hooks fail closed) — the
	// caller's own arguments were fine.
	long := "http://example.com/" + strings.Repeat("a", 4096-len("http://example.com/"))
	r = do(t, srv, "POST", "/v1/tools/fetch_url/call", `{"arguments":{"url":"`+long+`"}}`, "")
	if r.status != 403 || r.errorCode() != "denied" || !strings.Contains(string(r.body), "hook:guard/check_fetch rewrote the arguments of fetch_url into ones the tool does not accept") {
		t.Fatalf("rewrite not re-validated: %d %s", r.status, r.body)
	}

	// ask (delete_note needs approval): waits, then runs on approve.
	type answer struct{ r response }
	call := func(args string) chan answer {
		ch := make(chan answer, 1)
		go func() { ch <- answer{do(t, srv, "POST", "/v1/tools/delete_note/call", `{"arguments":`+args+`}`, "")} }()
		return ch
	}
	done := call(`{"id":"1"}`)
	p := waitApproval(t, g.gov)
	listed := do(t, srv, "GET", "/v1/approvals", "", "")
	if !strings.Contains(string(listed.body), `"id":"`+p.ID+`"`) || !strings.Contains(string(listed.body), `"arguments":{"id":"1"}`) {
		t.Fatalf("GET /v1/approvals: %s", listed.body)
	}
	select {
	case a := <-done:
		t.Fatalf("the call did not wait: %d %s", a.r.status, a.r.body)
	case <-time.After(200 * time.Millisecond):
	}
	if r := do(t, srv, "POST", "/v1/approvals/"+p.ID, `{"decision":"approve"}`, ""); r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	if a := <-done; a.r.status != 200 || !strings.Contains(string(a.r.body), `"deleted":false`) {
		t.Fatalf("approved call: %d %s", a.r.status, a.r.body)
	}
	// deny
	done = call(`{"id":"2"}`)
	p = waitApproval(t, g.gov)
	// A decision that could be read two ways is refused, and decides
	// nothing: the call still waits.
	for _, ambiguous := range []string{
		`{"decision":"deny","decision":"approve"}`, `{"DECISION":"approve"}`, `{"Decision":"approve"}`,
		`{"decision":"deny"} {"decision":"approve"}`, `{"decision":"approve"}x`, `{"decision":"appr\u006fve","reason":"\ud800"}`,
		"{\"decision\":\"approve\",\"reason\":\"\xff\"}", `{"decision":["approve"]}`, `{"decision":"approve","reason":7}`,
	} {
		if r := do(t, srv, "POST", "/v1/approvals/"+p.ID, ambiguous, ""); r.status != 400 || !strings.Contains(string(r.body), "the body must be") {
			t.Errorf("decision %s: %d %s, want 400", ambiguous, r.status, r.body)
		}
	}
	if ps := g.gov.Approvals().List(); len(ps) != 1 || ps[0].ID != p.ID {
		t.Fatalf("after refused decisions, pending: %+v", ps)
	}
	if r := do(t, srv, "POST", "/v1/approvals/"+p.ID, `{"decision":"deny","reason":"keep it"}`, ""); r.status != 200 {
		t.Fatalf("deny: %d %s", r.status, r.body)
	}
	if a := <-done; a.r.status != 403 || a.r.errorCode() != "denied" || !strings.Contains(string(a.r.body), "keep it") {
		t.Fatalf("denied call: %d %s", a.r.status, a.r.body)
	}
	if r := do(t, srv, "POST", "/v1/approvals/"+p.ID, `{"decision":"approve"}`, ""); r.status != 404 {
		t.Fatalf("deciding twice: %d %s", r.status, r.body)
	}
	// A decision too large is 413 and says so (not "unexpected EOF"); an
	// unknown key of 100 KB is 400 with a bounded message.
	if r := do(t, srv, "POST", "/v1/approvals/x", `{"decision":"deny","reason":"`+strings.Repeat("r", 100_000)+`"}`, ""); r.status != 413 || r.errorCode() != "payload_too_large" || !strings.Contains(string(r.body), "shorter reason") {
		t.Errorf("a 100 KB reason: %d %.300s", r.status, r.body)
	}
	if r := do(t, srv, "POST", "/v1/approvals/x", `{"decision":"deny","`+strings.Repeat("k", 60_000)+`":1}`, ""); r.status != 400 || len(r.body) > 4096 {
		t.Errorf("a 60 KB unknown key: %d, %d bytes: %.300s", r.status, len(r.body), r.body)
	}
	// A wrong method on a governance route is 405 with Allow, like the
	// other routes, not "no route".
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/v1/approvals", "GET, HEAD"}, {"DELETE", "/v1/approvals", "GET, HEAD"},
		{"GET", "/v1/approvals/" + p.ID, "POST"}, {"PUT", "/v1/approvals/x", "POST"},
		{"POST", "/v1/audit", "GET, HEAD"},
	} {
		r := do(t, srv, c.method, c.path, "", "")
		if r.status != 405 || r.header.Get("Allow") != c.allow || !strings.Contains(string(r.body), "method_not_allowed") {
			t.Errorf("%s %s: %d Allow=%q %s", c.method, c.path, r.status, r.header.Get("Allow"), r.body)
		}
	}
	// timeout
	g.gov.Approvals().Timeout = 300 * time.Millisecond
	if a := <-call(`{"id":"3"}`); a.r.status != 403 || !strings.Contains(string(a.r.body), "nobody approved delete_note within 300ms") {
		t.Fatalf("timed out call: %d %s", a.r.status, a.r.body)
	}
	g.gov.Approvals().Timeout = time.Minute

	// The MCP client's elicitation answer decides when it supports it.
	ecs := connectMCP(t, srv, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": strings.Contains(req.Params.Message, `"4"`)}}, nil
	}})
	res, err = ecs.CallTool(ctx, mcpCall("delete_note", map[string]any{"id": "4"}))
	if err != nil || res.IsError || !strings.Contains(textOf(res), `"deleted":false`) {
		t.Fatalf("elicitation approve: %v %s", err, textOf(res))
	}
	res, err = ecs.CallTool(ctx, mcpCall("delete_note", map[string]any{"id": "5"}))
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "denied: the user (asked by the MCP client) declined") {
		t.Fatalf("elicitation deny: %v %s", err, textOf(res))
	}

	// Policy deny.
	if err := g.gov.SetPolicy("delete_*", "deny", "test"); err != nil {
		t.Fatal(err)
	}
	if r := do(t, srv, "POST", "/v1/tools/delete_note/call", `{"arguments":{"id":"6"}}`, ""); r.status != 403 || !strings.Contains(string(r.body), "policy denies delete_note") {
		t.Fatalf("policy deny: %d %s", r.status, r.body)
	}

	// Every call and change is in the audit log, which verifies.
	recs := decode[struct{ Records []audit.Record }](t, do(t, srv, "GET", "/v1/audit?since=1h", "", "").body).Records
	var calls, changes, approvalVia []string
	for _, rec := range recs {
		if rec.Kind == audit.KindCall {
			calls = append(calls, rec.Entry+" "+rec.Tool+" "+rec.Decision+" "+rec.DecidedBy+" "+rec.Outcome)
		} else {
			changes = append(changes, rec.Action+" "+rec.Subject+" "+rec.Actor)
			// Who decided, and through which entry point: the HTTP API's
			// token also lets an agent decide its own waiting calls.
			if strings.HasPrefix(rec.Action, "approval_") && rec.Action != "approval_timeout" {
				approvalVia = append(approvalVia, rec.Action+" "+rec.Actor+" "+strings.SplitN(rec.Detail, " ", 3)[2])
			}
		}
	}
	want := []string{
		"http fetch_url denied hook:guard/check_fetch denied",
		"mcp-http fetch_url denied hook:guard/check_fetch denied",
		"http fetch_url denied hook:guard/check_fetch denied",
		"http delete_note approved operator ok",
		"http delete_note denied operator denied",
		"http delete_note denied timeout denied",
		"mcp-http delete_note approved mcp-client ok",
		"mcp-http delete_note denied mcp-client denied",
		"http delete_note denied policy rule \"delete_*\" denied",
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("audited calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range []string{"install guard", "install notes", "approval_approve delete_note operator", "approval_deny delete_note operator",
		"approval_timeout delete_note", "approval_approve delete_note mcp-client", "approval_deny delete_note mcp-client", "policy_set delete_* test"} {
		if !strings.Contains(strings.Join(changes, "\n"), c) {
			t.Errorf("no change %q in %q", c, changes)
		}
	}
	wantVia := []string{
		"approval_approve operator of http call, decided over http",
		"approval_deny operator of http call, decided over http: keep it",
		"approval_approve mcp-client of mcp-http call, decided over mcp-http",
		"approval_deny mcp-client of mcp-http call, decided over mcp-http: the user answered no",
	}
	if strings.Join(approvalVia, "\n") != strings.Join(wantVia, "\n") {
		t.Errorf("audited approval decisions:\n%s\nwant:\n%s", strings.Join(approvalVia, "\n"), strings.Join(wantVia, "\n"))
	}
	if only := decode[struct{ Records []audit.Record }](t, do(t, srv, "GET", "/v1/audit?tool=fetch_url", "", "").body).Records; len(only) != 3 {
		t.Errorf("?tool=fetch_url: %d records", len(only))
	}

	data, err := os.ReadFile(g.log.Path())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(bytes.NewReader(data), ""); err != nil {
		t.Fatal(err)
	}
	// One byte of one record changed outside toolhost: verify names it.
	lines := bytes.SplitAfter(data, []byte("\n"))
	at := len(lines[0]) + len(lines[1]) + len(lines[2]) + bytes.Index(lines[3], []byte(`"kind"`)) + 3
	data[at] ^= 0x01
	_, err = audit.Verify(bytes.NewReader(data), "")
	var bad *audit.BadRecordError
	if !errors.As(err, &bad) || bad.Line != 4 || bad.Seq != 4 {
		t.Fatalf("after a changed byte: %v", err)
	}
}
