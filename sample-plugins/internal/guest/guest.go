// Package guest holds the few helpers every sample plugin needs around the
// Extism PDK: strict argument decoding and the success and error paths of
// an export. It builds for wasip1 only, like the samples.
package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/extism/go-pdk"
)

// DecodeArgs parses the arguments object strictly into v (unknown fields
// are errors; the host has already validated them against the schema). An
// empty input counts as {}.
func DecodeArgs(in []byte, v any) error {
	in = bytes.TrimSpace(in)
	if len(in) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	if dec.More() {
		return errors.New("invalid arguments: expected a single JSON object")
	}
	return nil
}

// Clip keeps echoed user input short in error messages.
func Clip(s string) string {
	const max = 120
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

// Succeed sets v, as JSON, as the export's output and returns its exit code.
func Succeed(v any) int32 {
	out, err := json.Marshal(v)
	if err != nil {
		return Fail(err)
	}
	pdk.Output(out)
	return 0
}

// Fail sets err as the export's error (the host reports it as a tool
// error) and returns its exit code.
func Fail(err error) int32 {
	pdk.SetError(err)
	return 1
}
