// Package sandbox runs verified wasm executors under limits.
//
// An Engine compiles a module once and hands out a Module whose Call runs
// one export with the arguments JSON as its Extism input. Every call gets a
// fresh instance (no state carries over from one call to the next), runs
// with the memory page cap, deadline and output cap of the signed manifest,
// and ends with either the output or an *Error with a Code.
//
// Engines only ever see wasm that the host has verified and pre-validated;
// they are still written to survive anything the module does at run time.
package sandbox

import (
	"context"
	"fmt"

	"github.com/toolhost/toolhost/plugin"
)

// Code classifies why a call failed. The values are part of the host API.
type Code string

// Codes of call failures.
const (
	CodeTimeout          Code = "timeout"
	CodeMemoryLimit      Code = "memory_limit"
	CodeOutputTooLarge   Code = "output_too_large"
	CodePluginError      Code = "plugin_error"
	CodeInvalidModule    Code = "invalid_module"
	CodePermissionDenied Code = "permission_denied"
	CodeBusy             Code = "busy"
	CodeUnavailable      Code = "plugin_unavailable"
	CodeInternal         Code = "internal_error"
)

// Error is a call failure with a message a model can read.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf makes an *Error.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Spec is everything an engine needs to compile and run one plugin. Limits
// are already effective (defaults filled in, host clamps applied).
type Spec struct {
	// Key identifies the module (the plugin digest); engines may cache by it.
	Key         string
	Name        string
	Wasm        []byte
	Limits      plugin.Limits
	Permissions plugin.Permissions
	// Exports are the functions the manifest's tools call.
	Exports []string
	// ReuseInstances lets calls run one after another in the same instance
	// (the signed manifest's opt-in); otherwise every call gets a fresh one.
	ReuseInstances bool
	// AllowPrivateNetwork is the operator's explicit grant to reach
	// loopback, private and link-local addresses (never the plugin's).
	AllowPrivateNetwork bool
}

// Engine compiles modules. Implementations are safe for concurrent use.
type Engine interface {
	// Compile prepares spec for calls. It may take seconds for large modules
	// (it should use a compilation cache).
	Compile(ctx context.Context, spec Spec) (Module, error)
	Close(ctx context.Context) error
}

// Module is a compiled plugin. Call is safe for concurrent use; each call
// runs in its own fresh instance.
type Module interface {
	// Call runs export with input and returns its output, or an *Error.
	Call(ctx context.Context, export string, input []byte) ([]byte, error)
	Close(ctx context.Context) error
}
