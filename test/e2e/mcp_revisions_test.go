package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// The official TypeScript SDK v2 client (test/mcpclient2) against a real
// `toolhost serve` and `toolhost mcp`, on each protocol revision over each
// transport: what the reference client sees must be what the signed
// manifests declare, and the revision on the wire must be the one asked for.

// signedBundle writes sample plugin NAME as a bundle signed by the world's
// curator and returns its path.
func (w *world) signedBundle(name string) string {
	w.t.Helper()
	path := filepath.Join(w.dir, name+".plugin")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.WriteFile(path, testplugins.Bundle(w.t, name).Bytes(), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.run("curator", "sign", "--key", filepath.Join(w.dir, "alice.key"), path)
	return path
}

// manifestTool is a tool as its plugin.json declares it.
type manifestTool struct {
	Name         string          `json:"name"`
	Parameters   json.RawMessage `json:"parameters"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Annotations  *struct {
		Title       string `json:"title"`
		ReadOnly    bool   `json:"read_only"`
		Destructive bool   `json:"destructive"`
		Idempotent  bool   `json:"idempotent"`
		OpenWorld   bool   `json:"open_world"`
	} `json:"annotations"`
	icon string // the plugin's, shown on each of its tools
}

func manifestTools(t *testing.T, plugins ...string) map[string]manifestTool {
	t.Helper()
	tools := map[string]manifestTool{}
	for _, p := range plugins {
		data, err := os.ReadFile(filepath.Join(testplugins.Dir(t, p), "plugin.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Icon  string
			Tools []manifestTool
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s/plugin.json: %v", p, err)
		}
		for _, tl := range m.Tools {
			tl.icon = m.Icon
			tools[tl.Name] = tl
		}
	}
	return tools
}

// jsonEqual compares a decoded JSON value with raw JSON.
func jsonEqual(got any, want json.RawMessage) bool {
	var w any
	if json.Unmarshal(want, &w) != nil {
		return false
	}
	return reflect.DeepEqual(got, w)
}

// checkListedTools compares a list step's tools with the manifests: names,
// input schema, output schema and the MCP title and annotations.
func checkListedTools(t *testing.T, list map[string]any, want map[string]manifestTool) {
	t.Helper()
	tools, _ := list["tools"].([]any)
	var names []string
	for _, x := range tools {
		tl, _ := x.(map[string]any)
		name, _ := tl["name"].(string)
		names = append(names, name)
		m, ok := want[name]
		if !ok {
			t.Errorf("listed tool %q is in no installed manifest", name)
			continue
		}
		if !jsonEqual(tl["inputSchema"], m.Parameters) {
			t.Errorf("%s: inputSchema %v, manifest parameters %s", name, tl["inputSchema"], m.Parameters)
		}
		if m.OutputSchema == nil {
			if _, has := tl["outputSchema"]; has {
				t.Errorf("%s: outputSchema %v, but the manifest declares none", name, tl["outputSchema"])
			}
		} else if !jsonEqual(tl["outputSchema"], m.OutputSchema) {
			t.Errorf("%s: outputSchema %v, manifest output_schema %s", name, tl["outputSchema"], m.OutputSchema)
		}
		checkIcon(t, name, tl["icons"], m.icon)
		a := m.Annotations
		if a == nil {
			if tl["annotations"] != nil || tl["title"] != nil {
				t.Errorf("%s: title %v, annotations %v, but the manifest declares none", name, tl["title"], tl["annotations"])
			}
			continue
		}
		wantAnn := map[string]any{"title": a.Title, "readOnlyHint": a.ReadOnly, "destructiveHint": a.Destructive, "idempotentHint": a.Idempotent, "openWorldHint": a.OpenWorld}
		if !reflect.DeepEqual(tl["annotations"], wantAnn) {
			t.Errorf("%s: annotations %v, want %v (from the manifest)", name, tl["annotations"], wantAnn)
		}
		if tl["title"] != a.Title {
			t.Errorf("%s: title %v, want %q", name, tl["title"], a.Title)
		}
	}
	var wantNames []string
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(names)
	sort.Strings(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("tools %v, want %v", names, wantNames)
	}
}

// checkIcon: a plugin's icon reaches each of its tools as one MCP icon
// with the same data: URI and its media type; no icon, no icons.
func checkIcon(t *testing.T, tool string, icons any, want string) {
	t.Helper()
	list, _ := icons.([]any)
	if want == "" {
		if icons != nil {
			t.Errorf("%s: icons %v, but its plugin has none", tool, icons)
		}
		return
	}
	var icon map[string]any
	if len(list) == 1 {
		icon, _ = list[0].(map[string]any)
	}
	mime, _, _ := strings.Cut(strings.TrimPrefix(want, "data:"), ";")
	if icon == nil || icon["src"] != want || icon["mimeType"] != mime {
		t.Errorf("%s: icons %.200v, want one with the plugin's data: URI (%s)", tool, icons, mime)
	}
}

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

// addNote adds a note and returns its id.
func addNote(t *testing.T, c *mcpClient, text string) string {
	t.Helper()
	res := c.step(fmt.Sprintf(`{"op":"call","tool":"add_note","arguments":{"text":%q}}`, text))
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["id"].(string)
	if res["isError"] != false || id == "" {
		t.Fatalf("add_note: %v", res)
	}
	return id
}

// approveThroughElicitation: delete_note needs approval; the client (run
// with --elicit approve) is asked once, with the tool and its arguments,
// and the call then runs. On 2026-07-28 the question comes back as an
// input_required result and the SDK retries the call with the answer
// (MRTR): the SDK drops any server-to-client request on that revision, so
// an approval there proves the round trip.
func approveThroughElicitation(t *testing.T, c *mcpClient, rev string) {
	t.Helper()
	id := addNote(t, c, "to be deleted on "+rev)
	res := c.step(fmt.Sprintf(`{"op":"call","tool":"delete_note","arguments":{"id":%q}}`, id))
	if sc, _ := res["structuredContent"].(map[string]any); res["isError"] != false || sc["deleted"] != true || sc["id"] != id {
		t.Fatalf("delete_note approved through elicitation: %v", res)
	}
	info := c.step(`{"op":"info"}`)
	asked, _ := info["elicitations"].([]any)
	if len(asked) != 1 {
		t.Fatalf("elicitations %v, want one for delete_note", info["elicitations"])
	}
	q, _ := asked[0].(map[string]any)
	if msg, _ := q["message"].(string); !strings.Contains(msg, "delete_note") || !strings.Contains(msg, id) {
		t.Errorf("the approval question %q does not name the tool and its arguments", msg)
	}
}

// denyThroughElicitation: a user who says no gets a denied tool error, and
// the note stays.
func denyThroughElicitation(t *testing.T, c *mcpClient) {
	t.Helper()
	id := addNote(t, c, "to be kept")
	res := c.step(fmt.Sprintf(`{"op":"call","tool":"delete_note","arguments":{"id":%q}}`, id))
	if res["isError"] != true || !strings.HasPrefix(contentText(res), "denied: ") {
		t.Fatalf("delete_note refused through elicitation: %v", res)
	}
	list := c.step(`{"op":"call","tool":"list_notes","arguments":{}}`)
	if !strings.Contains(fmt.Sprint(list["structuredContent"]), id) {
		t.Errorf("note %s is gone after the user refused its deletion: %v", id, list)
	}
	closeClean(t, c)
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

// sdkV2ProgressRace is what SDK v2 (2.4.0) reports when the last progress
// notification and the response arrive in one read: it runs notification
// handlers a microtask later than responses, so the request is gone when
// the notification is handled. toolhost writes them in order
// (TestStdioProgressPrecedesResult); this test tolerates the line over
// stdio only.
const sdkV2ProgressRace = "mcpclient: transport error: Received a progress notification for an unknown token"

// Progress on both revisions and transports, as the reference client
// sees it: the host's heartbeat while a call runs (the conformance
// fixture's tool takes 2.5 s).
func TestSDKv2Progress(t *testing.T) {
	w := newWorld(t)
	w.run("plugin", "install", w.signedBundle("conformance"))
	s := w.serve()
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		for _, tr := range []struct {
			name string
			args []string
		}{
			{"stdio", []string{"stdio", "--protocol-version", rev, "--", w.bin, "mcp"}},
			{"http", []string{"http", s.url + "/mcp", "--token", s.token, "--protocol-version", rev}},
		} {
			t.Run(rev+"/"+tr.name, func(t *testing.T) {
				c := startNodeClient(t, w, sdkV2, tr.args...)
				res := c.step(`{"op":"call","tool":"test_tool_with_progress","arguments":{},"progress":true}`)
				if res["isError"] != false || contentText(res) != "Progress test completed" {
					t.Fatalf("call: %v", res)
				}
				var progress []struct {
					Progress float64
					Message  string
				}
				raw, _ := json.Marshal(res["progress"])
				if err := json.Unmarshal(raw, &progress); err != nil || len(progress) < 3 {
					t.Fatalf("progress %s: want started and a heartbeat a second through a 2.5 s call", raw)
				}
				if progress[0].Message != "started" {
					t.Errorf("first progress %+v, want started", progress[0])
				}
				for i := 1; i < len(progress); i++ {
					if progress[i].Progress <= progress[i-1].Progress {
						t.Errorf("progress does not increase: %s", raw)
					}
				}
				if last := progress[len(progress)-1].Message; tr.name == "http" && last != "finished" {
					t.Errorf("last progress %q, want finished", last)
				}
				if err := c.close(); err != nil {
					t.Fatal(err)
				}
				for _, line := range strings.Split(c.stderr(), "\n") {
					if strings.HasPrefix(line, "mcpclient: ") && !(tr.name == "stdio" && strings.HasPrefix(line, sdkV2ProgressRace)) {
						t.Errorf("the client reported: %s", line)
					}
				}
			})
		}
	}
}
