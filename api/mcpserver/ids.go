package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// maxExactID is the largest integer id answered exactly: the SDK reads a
// numeric JSON-RPC id as a float64 and answers under its int64 value, so
// above 2^53-1 (and for fractions) it answers under a different number.
const maxExactID = 1<<53 - 1

// checkRequestID says why the id of the JSON-RPC request msg (one object)
// cannot be answered under the id the client sent, or returns nil: the SDK
// would answer id 1.5 as 1 and 9007199254740993 as 9007199254740992, so a
// client waiting for its id would never see the answer, and two requests
// could share one. A number id must be an integer written without a
// fraction or an exponent, of at most 2^53-1 either way (JSON-RPC advises
// against fractions; MCP's ids are strings or integers in practice).
// Messages that are not requests (responses, malformed objects) and ids of
// other types are left to the SDK.
func checkRequestID(msg []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == nil || len(m.ID) == 0 {
		return nil
	}
	id := m.ID
	if c := id[0]; c != '-' && (c < '0' || c > '9') {
		return nil // a string, null or an object: the SDK's to judge
	}
	digits := bytes.TrimPrefix(id, []byte("-"))
	if n, err := strconv.ParseUint(string(digits), 10, 64); err == nil && n <= maxExactID {
		return nil
	}
	shown := id
	if len(shown) > 40 {
		shown = append(bytes.Clone(shown[:40]), "…"...)
	}
	return fmt.Errorf("invalid request: id %s is not an integer this server answers under exactly (it reads number ids as 64-bit floats); use a string id, or an integer between -%d and %d written without a fraction or exponent", shown, maxExactID, maxExactID)
}
