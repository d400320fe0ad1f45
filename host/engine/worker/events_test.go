package worker

import (
	"bufio"
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/enginetest"
)

// Event frames a worker writes come back, in order, before the reply that
// follows them; the sink gets each once, the reply is the frame returned.
func TestEventFramesBeforeReply(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	fe := &frameEvents{bw: bw, level: engine.LogInfo}
	fe.Log(engine.LogInfo, "one")
	fe.Progress(engine.Progress{Progress: 1, Total: 2, Message: "half"})
	fe.Log(engine.LogWarn, "two")
	if err := replyCall(bw, nil, []byte("out"), 0); err != nil {
		t.Fatal(err)
	}
	sink := &enginetest.Sink{Level: engine.LogInfo}
	f, err := newRelay(sink).readReply(&buf, 1<<20, func() {})
	if err != nil || f.kind != kindReply || string(f.body) != "out" {
		t.Fatalf("reply: %v kind %d body %q", err, f.kind, f.body)
	}
	lines, progress, _ := sink.Got()
	if strings.Join(lines, "|") != "info one|warn two" || len(progress) != 1 || progress[0] != (engine.Progress{Progress: 1, Total: 2, Message: "half"}) {
		t.Errorf("lines %q progress %+v", lines, progress)
	}
	// Nobody asked: the events are read past, the reply still comes.
	buf.Reset()
	fe.Log(engine.LogError, "unasked")
	_ = replyCall(bw, nil, nil, 0)
	if f, err := (*relay)(nil).readReply(&buf, 1<<20, func() {}); err != nil || f.kind != kindReply {
		t.Fatalf("reply after unasked events: %v kind %d", err, f.kind)
	}
}

// FuzzRelayEvent: an event header is untrusted bytes from a worker. The
// relay never panics and passes on only lines within the bounds and the
// sink's level, and finite progress.
func FuzzRelayEvent(f *testing.F) {
	f.Add([]byte(`{"level":3,"text":"hello"}`))
	f.Add([]byte(`{"progress":1,"total":2,"text":"half"}`))
	f.Add([]byte(`{"level":255,"text":"x"}`))
	f.Add([]byte(`{"progress":1e309}`))
	f.Add([]byte(`{"level":4,"text":"` + strings.Repeat("é", 2000) + `"}`))
	f.Add([]byte(`{"text":"\xff\xfe"}`))
	f.Fuzz(func(t *testing.T, header []byte) {
		sink := &enginetest.Sink{Level: engine.LogDebug}
		r := newRelay(sink)
		for range 3 {
			r.pass(header)
		}
		lines, progress, _ := sink.Got()
		for _, l := range lines {
			level, text, _ := strings.Cut(l, " ")
			if level != "debug" && level != "info" && level != "warn" && level != "error" {
				t.Fatalf("line at level %q passed", level)
			}
			if len(text) > engine.MaxLogLineBytes || !utf8.ValidString(text) {
				t.Fatalf("line of %d bytes (valid UTF-8: %v) passed", len(text), utf8.ValidString(text))
			}
		}
		for _, p := range progress {
			if math.IsNaN(p.Progress) || math.IsInf(p.Progress, 0) || p.Total < 0 || math.IsInf(p.Total, 0) || len(p.Message) > engine.MaxLogLineBytes {
				t.Fatalf("progress %+v passed", p)
			}
		}
	})
}
