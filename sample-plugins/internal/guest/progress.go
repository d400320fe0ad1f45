package guest

import "github.com/extism/go-pdk"

// hostProgress is toolhost's progress host function: progress and total
// (<= 0: unknown) as numbers, message as the offset of an Extism block
// (0: none). It answers nothing and needs no grant.
//
//go:wasmimport toolhost progress
func hostProgress(progress, total float64, message uint64)

// Progress tells a caller that asked for progress (an MCP client's
// progressToken) how far the call is: done of total (total <= 0: unknown),
// with an optional message. Call it as often as is natural (per item): the
// host sends at most one report per 50 ms, the latest, and the last one
// always; a caller that did not ask costs one host call and nothing more.
func Progress(done, total float64, message string) {
	var off uint64
	if message != "" {
		m := pdk.AllocateString(message)
		defer m.Free()
		off = m.Offset()
	}
	hostProgress(done, total, off)
}
