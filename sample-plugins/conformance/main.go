// Command conformance is the fixture plugin for the MCP conformance suite
// (make conformance): it provides the tool names the suite's scenarios call,
// with the answers they expect. It is not shipped in demos.
package main

import (
	"errors"
	"time"

	"github.com/toolhost/toolhost/sample-plugins/internal/guest"
)

//go:wasmexport test_simple_text
func testSimpleText() int32 {
	return guest.Succeed("This is a simple text response for testing.")
}

//go:wasmexport test_error_handling
func testErrorHandling() int32 {
	return guest.Fail(errors.New("This tool intentionally returns an error for testing"))
}

// testToolWithProgress runs long enough (2.5 s) for the host's progress
// heartbeat (every second) to be heard between its start and its end.
//
//go:wasmexport test_tool_with_progress
func testToolWithProgress() int32 {
	time.Sleep(2500 * time.Millisecond)
	return guest.Succeed("Progress test completed")
}

func main() {}

//go:wasmexport json_schema_2020_12_tool
func jsonSchema202012Tool() int32 {
	return guest.Succeed("ok")
}
