// Package toolerr is the typed error of a tool call: a Code from the host
// API contract and a message a model can read. It is a leaf: the engines,
// the runtime and every front end (HTTP, MCP, control socket, CLI) share it,
// and an error is converted to it once, where it arises.
package toolerr

import (
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/internal/clip"
)

// Code classifies why a call failed. The values are part of the host API.
type Code string

// Codes of call failures (shared/DESIGN.md, "Host API over HTTP").
const (
	CodeToolNotFound     Code = "tool_not_found"
	CodeInvalidArguments Code = "invalid_arguments"
	CodeTimeout          Code = "timeout"
	CodeCancelled        Code = "cancelled"
	CodeMemoryLimit      Code = "memory_limit"
	CodeOutputTooLarge   Code = "output_too_large"
	CodePluginError      Code = "plugin_error"
	CodeInvalidModule    Code = "invalid_module"
	CodePermissionDenied Code = "permission_denied"
	CodeDenied           Code = "denied"
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

// Errorf makes an *Error. A message longer than MaxMessageBytes keeps its
// start and its end (what was wrong, what to do) around what is cut.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: Bound(fmt.Sprintf(format, args...))}
}

// MaxMessageBytes bounds the messages Errorf makes. A message quotes what
// it refuses (a key, a path, a plugin's own error text), which an input can
// make as long as a request body; the reader is a model or a person.
const MaxMessageBytes = 2048

// Bound returns msg, or, when it is longer than MaxMessageBytes, its
// start and end around a note of how much was cut (cut between UTF-8
// characters).
func Bound(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	start, end, _ := clip.Middle(msg, MaxMessageBytes*3/4, MaxMessageBytes/5)
	return fmt.Sprintf("%s… (%d bytes cut) …%s", start, len(msg)-len(start)-len(end), end)
}

// CodeOf returns the code of err when it is an *Error, "" otherwise.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// As returns err as an *Error: itself when it is one (or wraps one), else an
// internal_error carrying its text. nil stays nil.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Errorf(CodeInternal, "%v", err)
}
