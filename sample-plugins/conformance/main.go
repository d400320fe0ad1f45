// Command conformance is the fixture plugin for the MCP conformance suite
// (make conformance): it provides the tool names the suite's scenarios call,
// with the answers they expect. It is not shipped in demos.
package main

import (
	"errors"
	"time"

	"github.com/extism/go-pdk"

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

// testToolWithProgress reports 0, 50 and 100 of 100 through
// toolhost.progress, as the scenario asks (the host adds its "started" and
// "finished"). It takes 2.5 s in all, so that the host's heartbeat (every
// second) is heard too and tests have a slow tool.
//
//go:wasmexport test_tool_with_progress
func testToolWithProgress() int32 {
	guest.Progress(0, 100, "starting")
	time.Sleep(1250 * time.Millisecond)
	guest.Progress(50, 100, "half way")
	time.Sleep(1250 * time.Millisecond)
	guest.Progress(100, 100, "done")
	return guest.Succeed("Progress test completed")
}

func main() {}

// testApprovedAction backs the tools whose manifest says needs_approval:
// the host asks the client's user before it runs (over 2026-07-28 as an
// input-required result, SEP-2322), so it only runs once approved.
//
//go:wasmexport test_approved_action
func testApprovedAction() int32 {
	return guest.Succeed("approved: the action ran")
}

// testHeaderParam echoes its region argument. Its schema marks region with
// x-mcp-header (SEP-2243): a 2026-07-28 client mirrors the value into the
// Mcp-Param-Region header, and the server refuses a call whose header is
// missing or does not match the body before the plugin runs.
//
//go:wasmexport test_header_param
func testHeaderParam() int32 {
	var args struct {
		Region string `json:"region"`
	}
	if err := guest.DecodeArgs(pdk.Input(), &args); err != nil {
		return guest.Fail(err)
	}
	return guest.Succeed("region: " + guest.Clip(args.Region))
}

//go:wasmexport json_schema_2020_12_tool
func jsonSchema202012Tool() int32 {
	return guest.Succeed("ok")
}

// The multi-block tools answer with the toolhost_content envelope
// (docs/plugin-authoring.md, "Several content blocks").

// redPixelPNG is a 1×1 red PNG; silentWAV is 8 samples of 8-bit mono
// silence at 8 kHz: the smallest real files of their kinds.
const (
	redPixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	silentWAV   = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="
)

type block = map[string]any

func blocks(bs ...block) int32 {
	return guest.Succeed(map[string][]block{"toolhost_content": bs})
}

var (
	imageBlock    = block{"type": "image", "data": redPixelPNG, "mimeType": "image/png"}
	resourceBlock = block{"type": "resource", "resource": block{
		"uri": "test://embedded-resource", "mimeType": "text/plain",
		"text": "This is an embedded resource content.",
	}}
)

//go:wasmexport test_image_content
func testImageContent() int32 { return blocks(imageBlock) }

//go:wasmexport test_audio_content
func testAudioContent() int32 {
	return blocks(block{"type": "audio", "data": silentWAV, "mimeType": "audio/wav"})
}

//go:wasmexport test_embedded_resource
func testEmbeddedResource() int32 { return blocks(resourceBlock) }

//go:wasmexport test_multiple_content_types
func testMultipleContentTypes() int32 {
	return blocks(block{"type": "text", "text": "Multiple content types test:"}, imageBlock, resourceBlock)
}

// testToolWithLogging writes the three log lines the scenario asks for,
// 50 ms apart, through the Extism log functions.
//
//go:wasmexport test_tool_with_logging
func testToolWithLogging() int32 {
	pdk.Log(pdk.LogInfo, "Tool execution started")
	time.Sleep(50 * time.Millisecond)
	pdk.Log(pdk.LogInfo, "Tool processing data")
	time.Sleep(50 * time.Millisecond)
	pdk.Log(pdk.LogInfo, "Tool execution completed")
	return guest.Succeed("Logging test completed")
}
