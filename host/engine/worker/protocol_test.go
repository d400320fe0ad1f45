package worker

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/clip"
)

func TestFrameRoundTrip(t *testing.T) {
	for _, n := range []int{0, 10, 64 << 10, 64<<10 + 1, 1 << 20} {
		body := bytes.Repeat([]byte{'b'}, n)
		var buf bytes.Buffer
		if err := writeFrame(&buf, kindCall, callHeader{Key: "k", Export: "run", Measure: true}, body); err != nil {
			t.Fatal(err)
		}
		f, err := readFrame(&buf, n)
		if err != nil {
			t.Fatalf("body %d: %v", n, err)
		}
		if f.kind != kindCall || string(f.header) != `{"key":"k","export":"run","measure":true}` || !bytes.Equal(f.body, body) {
			t.Fatalf("body %d: got kind %d header %s body %d bytes", n, f.kind, f.header, len(f.body))
		}
		if buf.Len() != 0 {
			t.Fatalf("body %d: %d bytes left over", n, buf.Len())
		}
	}
}

// A worker is untrusted: lengths it announces are checked before anything
// is allocated.
func TestReadFrameRefusesLengthsBeforeAllocating(t *testing.T) {
	frame := func(total, hlen uint32) []byte {
		b := make([]byte, 9)
		binary.BigEndian.PutUint32(b[0:4], total)
		b[4] = kindReply
		binary.BigEndian.PutUint32(b[5:9], hlen)
		return b
	}
	for _, c := range []struct {
		name        string
		total, hlen uint32
	}{
		{"4 GiB body", 0xffffffff, 2},
		{"body above the cap", 5 + 2 + 1025, 2},
		{"header longer than the frame", 10, 100},
		{"header above its cap", 5 + maxHeaderBytes + 1, maxHeaderBytes + 1},
		{"total below the fixed part", 3, 0},
	} {
		_, err := readFrame(bytes.NewReader(frame(c.total, c.hlen)), 1024)
		if !errors.Is(err, errFrameTooLarge) {
			t.Errorf("%s: got %v, want errFrameTooLarge", c.name, err)
		}
	}
	if _, err := readFrame(bytes.NewReader(append(frame(5+2+10, 2), "{}"...)), 1024); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: got %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	writeFrame(&buf, kindReply, replyHeader{Code: "timeout", Message: "m", PeakRSS: 1}, []byte("out"))
	f.Add(buf.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 4, 0, 0, 0, 2})
	for _, h := range []string{`{"code":"denied","message":"x"}`, `{"code":"plugin_error","message":"\u001b[2J\u202e"}`, `{"peak_rss":-1}`, `{"code":"timeout","peak_rss":1e3}`, `null`, `{"code":7}`} {
		buf.Reset()
		writeFrame(&buf, kindReply, json.RawMessage(h), nil)
		f.Add(bytes.Clone(buf.Bytes()))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := readFrame(bytes.NewReader(data), 1024)
		if err != nil {
			return
		}
		if len(fr.body) > 1024 || len(fr.header) > maxHeaderBytes || len(fr.header)+len(fr.body)+9 > len(data) {
			t.Fatalf("frame larger than allowed: header %d body %d from %d bytes", len(fr.header), len(fr.body), len(data))
		}
		// Whatever reply header the host accepts is one a worker may
		// send, bounded, and reads back the same once encoded.
		h, err := parseReply(fr.header)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "its reply ") {
				t.Fatalf("refusal does not say what was wrong with the reply: %v", err)
			}
			return
		}
		if (h.Code != "" && !workerCodes[toolerr.Code(h.Code)]) || h.PeakRSS < 0 || len(h.Message) > toolerr.MaxMessageBytes+64 || clip.Printable(h.Message) != h.Message {
			t.Fatalf("accepted reply %+v", h)
		}
		enc, _ := json.Marshal(h)
		again, err := parseReply(enc)
		if err != nil || again != h {
			t.Fatalf("accepted reply %+v reads back as %+v, %v", h, again, err)
		}
	})
}

func TestParseStatusKB(t *testing.T) {
	status := []byte("Name:\tworker\nVmPeak:\t  999 kB\nVmHWM:\t   20480 kB\nVmRSS:\t 1024 kB\n")
	if got := parseStatusKB(status, "VmHWM:"); got != 20480<<10 {
		t.Errorf("VmHWM: got %d", got)
	}
	if got := parseStatusKB(status, "VmSwap:"); got != 0 {
		t.Errorf("missing field: got %d", got)
	}
}
