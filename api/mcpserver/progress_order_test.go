package mcpserver

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// On the wire, a call's progress ends before its result: the "finished"
// notification is written before the response, never after (a progress
// token names an operation in progress). Clients that hand notifications
// to their handlers later than responses (the TypeScript SDK v2 does) may
// still see it late; that is theirs to order.
func TestStdioProgressPrecedesResult(t *testing.T) {
	b := newFake(tool("slow", `{"type":"object"}`))
	b.answer("slow", func([]byte) (json.RawMessage, error) {
		time.Sleep(120 * time.Millisecond)
		return json.RawMessage(`"done"`), nil
	})
	s := New(b, "dev")
	s.progressEvery = 50 * time.Millisecond
	defer s.Close()
	r := startRaw(t, s)
	r.initialize()
	for i := range 5 {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"p"}}}`, i))
		var messages []string
		for {
			m := r.next()
			if m["id"] != nil {
				if m["result"] == nil {
					t.Fatalf("call %d answered %v", i, m)
				}
				break
			}
			if m["method"] == "notifications/progress" {
				params, _ := m["params"].(map[string]any)
				msg, _ := params["message"].(string)
				messages = append(messages, msg)
			}
		}
		if n := len(messages); n < 2 || messages[0] != "started" || messages[n-1] != "finished" {
			t.Fatalf("call %d: progress before the result %q, want started … finished", i, messages)
		}
	}
	// Nothing trails the last result: the next line is the ping's answer.
	r.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	if m := r.next(); m["id"] != "ping" {
		t.Fatalf("after the last result the server wrote %v, want the ping's answer", m)
	}
}
