package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

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
