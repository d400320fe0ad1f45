package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The official TypeScript SDK v2 client (test/mcpclient2) against a real
// `toolhost serve` and `toolhost mcp`, on each protocol revision over each
// transport: what the reference client sees must be what the signed
// manifests declare, and the revision on the wire must be the one asked for.

// wireOf is the info step's record of what the client sent.
type wireOf struct {
	Methods, MetaVersions, HeaderVersions, SessionIDs []string
}

func infoOf(t *testing.T, info map[string]any) (version, era, sessionID string, wire wireOf) {
	t.Helper()
	raw, _ := json.Marshal(info["wire"])
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatalf("info step without a wire record: %v", info)
	}
	version, _ = info["protocolVersion"].(string)
	era, _ = info["era"].(string)
	sessionID, _ = info["sessionId"].(string)
	return version, era, sessionID, wire
}

// checkRevision asserts that the connection runs on revision rev in the
// SDK's view and on the wire: 2025-11-25 through initialize (over HTTP a
// session, every request's MCP-Protocol-Version header rev, no _meta
// version), 2026-07-28 through server/discover (no initialize, no session,
// every request's _meta version and header rev).
func checkRevision(t *testing.T, info map[string]any, rev, transport string) {
	t.Helper()
	version, era, sessionID, wire := infoOf(t, info)
	if version != rev {
		t.Errorf("negotiated %q, asked for %q (info %v)", version, rev, info)
	}
	modern := rev >= "2026-07-28"
	if wantEra := map[bool]string{false: "legacy", true: "modern"}[modern]; era != wantEra {
		t.Errorf("era %q, want %q", era, wantEra)
	}
	if modern {
		if slices.Contains(wire.Methods, "initialize") {
			t.Errorf("2026-07-28 connection sent initialize: %v", wire.Methods)
		}
		if !slices.Equal(wire.MetaVersions, []string{rev}) {
			t.Errorf("requests' _meta protocol versions %v, want only %s", wire.MetaVersions, rev)
		}
	} else {
		if !slices.Contains(wire.Methods, "initialize") || slices.Contains(wire.Methods, "server/discover") {
			t.Errorf("2025-era connection sent %v, want initialize and no server/discover", wire.Methods)
		}
		if len(wire.MetaVersions) != 0 {
			t.Errorf("2025-era requests carry _meta protocol versions %v", wire.MetaVersions)
		}
	}
	if transport != "http" {
		return
	}
	if !slices.Equal(wire.HeaderVersions, []string{rev}) {
		t.Errorf("MCP-Protocol-Version headers sent: %v, want only %s", wire.HeaderVersions, rev)
	}
	if modern {
		if !slices.Contains(wire.Methods, "server/discover") {
			t.Errorf("2026-07-28 over HTTP without server/discover: %v", wire.Methods)
		}
		if sessionID != "" || len(wire.SessionIDs) != 0 {
			t.Errorf("2026-07-28 is stateless, but the server handed out sessions %v", wire.SessionIDs)
		}
	} else if sessionID == "" || len(wire.SessionIDs) != 1 {
		t.Errorf("2025-11-25 over HTTP: session %q, session ids seen %v; want one session", sessionID, wire.SessionIDs)
	}
}

// listCallAndRefuse lists the tools (as the manifests declare them), calls
// two with good arguments (structured results) and one with bad arguments
// (a tool error, not a JSON-RPC error).
func listCallAndRefuse(t *testing.T, c *mcpClient, want map[string]manifestTool, text string) {
	t.Helper()
	checkListedTools(t, c.step(`{"op":"list"}`), want)

	// callTool validates structuredContent against the listed outputSchema.
	res := c.step(fmt.Sprintf(`{"op":"call","tool":"add_note","arguments":{"text":%q}}`, text))
	sc, _ := res["structuredContent"].(map[string]any)
	if res["isError"] != false || sc["text"] != text || sc["id"] == "" || sc["id"] == nil {
		t.Fatalf("add_note: %v", res)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(contentText(res)), &fromText); err != nil || !reflect.DeepEqual(fromText, sc) {
		t.Errorf("add_note: text content %q is not the structured result %v", contentText(res), sc)
	}
	res = c.step(`{"op":"call","tool":"get_current_time","arguments":{"timezone":"Asia/Tokyo"}}`)
	if sc, _ := res["structuredContent"].(map[string]any); res["isError"] != false || sc["abbreviation"] != "JST" {
		t.Fatalf("get_current_time: %v", res)
	}

	bad := c.step(`{"op":"call","tool":"add_note","arguments":{"text":42}}`)
	if msg := contentText(bad); bad["isError"] != true || !strings.Contains(msg, "invalid_arguments") || !strings.Contains(msg, "/text") {
		t.Fatalf("add_note with a number for text: %v", bad)
	}
	if _, has := bad["protocolError"]; has {
		t.Fatalf("bad arguments are a tool error, not a JSON-RPC error: %v", bad)
	}
}

// closeClean ends the client's script and fails the test unless it exits
// 0 without a complaint of its own on stderr (a transport error, a failed
// subscription, a server that did not exit cleanly).
func closeClean(t *testing.T, c *mcpClient) {
	t.Helper()
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(c.stderr(), "\n") {
		if strings.HasPrefix(line, "mcpclient: ") {
			t.Errorf("the client reported: %s", line)
		}
	}
}

func TestSDKv2BothRevisionsBothTransports(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	w.run("plugin", "install", w.signedBundle("notes"))
	s := w.serve()
	want := manifestTools(t, "time", "notes")
	timeTools := manifestTools(t, "time")

	transports := []struct {
		name string
		args func(rev, elicit string) []string
	}{
		{"stdio", func(rev, elicit string) []string {
			return []string{"stdio", "--protocol-version", rev, "--elicit", elicit, "--", w.bin, "mcp"}
		}},
		{"http", func(rev, elicit string) []string {
			return []string{"http", s.url + "/mcp", "--token", s.token, "--protocol-version", rev, "--elicit", elicit}
		}},
	}
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		for _, tr := range transports {
			t.Run(rev+"/"+tr.name, func(t *testing.T) {
				c := startNodeClient(t, w, sdkV2, tr.args(rev, "approve")...)
				listCallAndRefuse(t, c, want, fmt.Sprintf("from %s over %s", rev, tr.name))
				// Over stdio the call runs in serve, and the question crosses
				// the control socket to `toolhost mcp`.
				approveThroughElicitation(t, c, rev)
				denyThroughElicitation(t, startNodeClient(t, w, sdkV2, tr.args(rev, "deny")...))

				// list_changed: unasked on 2025-11-25, on the subscriptions/listen
				// stream on 2026-07-28.
				w.run("plugin", "remove", "time")
				if got := c.step(`{"op":"wait_list_changed","timeout_ms":10000}`); got["received"] != true {
					t.Fatalf("no tools/list_changed after remove: %v", got)
				}
				without := map[string]manifestTool{}
				for n, m := range want {
					if _, isTime := timeTools[n]; !isTime {
						without[n] = m
					}
				}
				checkListedTools(t, c.step(`{"op":"list"}`), without)
				w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
				if got := c.step(`{"op":"wait_list_changed","timeout_ms":10000}`); got["received"] != true {
					t.Fatalf("no tools/list_changed after install: %v", got)
				}
				checkListedTools(t, c.step(`{"op":"list"}`), want)

				checkRevision(t, c.step(`{"op":"info"}`), rev, tr.name)
				closeClean(t, c)
			})
		}
	}
}

// A client that lets the SDK negotiate (probe with server/discover, fall
// back to initialize) gets the newest revision both sides speak.
func TestSDKv2AutoNegotiatesNewestRevision(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	s := w.serve()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"stdio", []string{"stdio", "--protocol-version", "auto", "--", w.bin, "mcp"}},
		{"http", []string{"http", s.url + "/mcp", "--token", s.token, "--protocol-version", "auto"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startNodeClient(t, w, sdkV2, tc.args...)
			res := c.step(`{"op":"call","tool":"get_current_time","arguments":{"timezone":"UTC"}}`)
			if res["isError"] != false {
				t.Fatalf("call: %v", res)
			}
			checkRevision(t, c.step(`{"op":"info"}`), "2026-07-28", tc.name)
			closeClean(t, c)
		})
	}
}

// `toolhost mcp` with no serve running opens the store itself.
func TestSDKv2StdioWithoutServe(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", filepath.Join(w.dir, "time.plugin"))
	w.run("plugin", "install", w.signedBundle("notes"))
	want := manifestTools(t, "time", "notes")
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			args := func(elicit string) []string {
				return []string{"stdio", "--protocol-version", rev, "--elicit", elicit, "--require-clean-exit", "--", w.bin, "mcp"}
			}
			c := startNodeClient(t, w, sdkV2, args("approve")...)
			listCallAndRefuse(t, c, want, "from "+rev+" without serve")
			approveThroughElicitation(t, c, rev)
			checkRevision(t, c.step(`{"op":"info"}`), rev, "stdio")
			closeClean(t, c)
			// One `toolhost mcp` at a time holds the store.
			denyThroughElicitation(t, startNodeClient(t, w, sdkV2, args("deny")...))
		})
	}
}
