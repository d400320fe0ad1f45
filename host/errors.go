package host

import (
	"errors"

	"github.com/toolhost/toolhost/host/sandbox"
)

// Error is a call failure with a code from the host API contract.
type Error = sandbox.Error

// Codes the host adds to those of the sandbox.
const (
	CodeToolNotFound     sandbox.Code = "tool_not_found"
	CodeInvalidArguments sandbox.Code = "invalid_arguments"
	CodeUnavailable      sandbox.Code = sandbox.CodeUnavailable
)

// Install errors.
var (
	ErrDowngrade        = errors.New("host: refusing to install an older version")
	ErrToolConflict     = errors.New("host: tool name already provided by another plugin")
	ErrNotInstalled     = errors.New("host: plugin is not installed")
	ErrNotAllowed       = errors.New("host: plugin refused by the trust policy")
	ErrInvalidModule    = errors.New("host: the wasm module was refused")
	ErrGrantUnavailable = errors.New("host: a file grant of the plugin cannot be opened")
	ErrWidening         = errors.New("host: the upgrade widens the plugin's permissions and needs confirmation")
)

// CodeOf returns the code of err when it is an *Error, "" otherwise.
func CodeOf(err error) sandbox.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
