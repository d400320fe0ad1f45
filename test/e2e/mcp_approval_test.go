package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// Approval through elicitation, as the SDK v2 client (mcpclient2 --elicit)
// answers it; TestSDKv2BothRevisionsBothTransports and
// TestSDKv2StdioWithoutServe run these on every revision and transport.

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
