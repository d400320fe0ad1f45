package worker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/clip"
)

// Frames between host and worker: a 9-byte header (u32 total length of
// what follows the length, u8 kind, u32 header length), a JSON header and a
// raw body. The worker never trusts the host less than itself, but the host
// treats everything a worker sends as untrusted: lengths are capped before
// anything is allocated.
const (
	kindLoad   byte = 1
	kindCall   byte = 2
	kindUnload byte = 3
	kindReply  byte = 4
	kindReady  byte = 5
	// kindCancel (host → worker, empty header {}) asks the worker to stop
	// the request in progress: its caller went away.
	kindCancel byte = 6
	// kindEvent (worker → host, header eventHeader, no body) is a
	// plugin's log line or progress report, sent during a call whose
	// request asked for events, before its reply.
	kindEvent byte = 7
	// kindInstantiating (worker → host, empty header {}, no body), sent
	// during a load once the module is compiled, says that its start
	// function runs now: the supervisor gives that the tool's timeout.
	kindInstantiating byte = 8

	maxHeaderBytes = 1 << 20
)

type frame struct {
	kind   byte
	header []byte
	body   []byte
}

func writeFrame(w io.Writer, kind byte, header any, body []byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	// A large body (a module, an output) is written as is rather than
	// copied next to the header: the host holds one copy of it, not two.
	inline := len(body) <= 64<<10
	n := 9 + len(h)
	if inline {
		n += len(body)
	}
	buf := make([]byte, 9, n)
	binary.BigEndian.PutUint32(buf[0:4], uint32(5+len(h)+len(body)))
	buf[4] = kind
	binary.BigEndian.PutUint32(buf[5:9], uint32(len(h)))
	buf = append(buf, h...)
	if inline {
		buf = append(buf, body...)
	}
	if _, err := w.Write(buf); err != nil || inline {
		return err
	}
	_, err = w.Write(body)
	return err
}

var errFrameTooLarge = errors.New("worker: frame too large")

func readFrame(r io.Reader, maxBody int) (frame, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	total := binary.BigEndian.Uint32(hdr[0:4])
	hlen := binary.BigEndian.Uint32(hdr[5:9])
	if total < 5 || hlen > total-5 || hlen > maxHeaderBytes || int64(total-5-hlen) > int64(maxBody) {
		return frame{}, fmt.Errorf("%w (%d bytes)", errFrameTooLarge, total)
	}
	rest := make([]byte, total-5)
	if _, err := io.ReadFull(r, rest); err != nil {
		return frame{}, err
	}
	return frame{kind: hdr[4], header: rest[:hlen], body: rest[hlen:]}, nil
}

type loadHeader struct {
	Key         string            `json:"key"`
	Name        string            `json:"name"`
	MemoryPages uint32            `json:"memory_pages"`
	TimeoutMS   uint32            `json:"timeout_ms"`
	MaxOutput   uint32            `json:"max_output_bytes"`
	Hosts       []string          `json:"allowed_hosts,omitempty"`
	Paths       map[string]string `json:"allowed_paths,omitempty"`
	Exports     []string          `json:"exports"`
	Private     bool              `json:"allow_private_network,omitempty"`
	Reuse       bool              `json:"reuse_instances,omitempty"`
	Config      map[string]string `json:"config,omitempty"`
	// Secrets carry the operator's values to the worker's host side; they
	// never enter the sandbox (engine.Spec.Secrets).
	Secrets []engine.Secret `json:"secrets,omitempty"`
	// BudgetMS is the time left to the deadline of the call that loads
	// the module (0: none, an install); the first instantiation stops then.
	BudgetMS uint32 `json:"budget_ms,omitempty"`
}

type callHeader struct {
	Key    string `json:"key"`
	Export string `json:"export"`
	// Measure asks the worker for the call's peak resident memory.
	Measure bool `json:"measure,omitempty"`
	// BudgetMS is the time left to the call's deadline: a call that ends
	// after it answers timeout (a call that does not end is killed by the
	// supervisor a grace later).
	BudgetMS uint32 `json:"budget_ms,omitempty"`
	// Events asks for the plugin's events (kindEvent frames): progress,
	// and log lines at LogLevel and above.
	Events   bool            `json:"events,omitempty"`
	LogLevel engine.LogLevel `json:"log_level,omitempty"`
	// Poll tells the worker to poll for its next request before parking
	// (spinner): set when no other call is inside the pool, the sequential
	// calls for which a parked worker's wake-up is the cost.
	Poll bool `json:"poll,omitempty"`
	// LongPoll: the calls have been sequential for a while; the worker
	// polls for up to longSpin (see there).
	LongPoll bool `json:"long_poll,omitempty"`
}

// eventHeader is one event: a log line (Level set) or a progress report.
type eventHeader struct {
	Level    engine.LogLevel `json:"level,omitempty"`
	Text     string          `json:"text,omitempty"` // the line, or the progress message
	Progress float64         `json:"progress,omitempty"`
	Total    float64         `json:"total,omitempty"`
}

type unloadHeader struct {
	Key string `json:"key"`
}

type replyHeader struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// PeakRSS is the worker's peak resident memory during the call, in
	// bytes, when the call asked for it.
	PeakRSS int64 `json:"peak_rss,omitempty"`
}

// workerCodes are the error codes a worker answers with: how its sandbox
// ended a load or a call. The others (denied, tool_not_found,
// invalid_arguments, busy, …) are the host's own decisions, which no
// worker may claim.
var workerCodes = map[toolerr.Code]bool{
	toolerr.CodeTimeout: true, toolerr.CodeCancelled: true, toolerr.CodeMemoryLimit: true,
	toolerr.CodeOutputTooLarge: true, toolerr.CodePluginError: true, toolerr.CodeInvalidModule: true,
	toolerr.CodePermissionDenied: true, toolerr.CodeUnavailable: true, toolerr.CodeInternal: true,
}

// parseReply reads a reply header, which a worker sends and the host does
// not trust: its code must be one a worker answers with, its peak memory
// not negative, and its message is made printable (clip.Printable) and
// bounded like the host's own (toolerr.Bound) before it reaches a caller.
func parseReply(raw []byte) (replyHeader, error) {
	var h replyHeader
	if err := json.Unmarshal(raw, &h); err != nil {
		return replyHeader{}, fmt.Errorf("its reply header is not the JSON object of a reply: %v", err)
	}
	if h.Code != "" && !workerCodes[toolerr.Code(h.Code)] {
		start, end, cut := clip.Middle(h.Code, 48, 16)
		if cut {
			start += "…" + end
		}
		return replyHeader{}, fmt.Errorf("its reply names the error code %q, which is not one a sandbox worker answers with", clip.Printable(start))
	}
	if h.PeakRSS < 0 {
		return replyHeader{}, fmt.Errorf("its reply states a negative peak memory (%d bytes)", h.PeakRSS)
	}
	h.Message = toolerr.Bound(clip.Printable(h.Message))
	return h, nil
}
