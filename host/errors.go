package host

import "errors"

// Install errors.
var (
	ErrDowngrade        = errors.New("host: refusing to install an older version")
	ErrToolConflict     = errors.New("host: tool name already provided by another plugin")
	ErrNotInstalled     = errors.New("host: plugin is not installed")
	ErrNotAllowed       = errors.New("host: plugin refused by the trust policy")
	ErrInvalidModule    = errors.New("host: the wasm module was refused")
	ErrGrantUnavailable = errors.New("host: a file grant of the plugin cannot be opened")
	ErrWidening         = errors.New("host: the upgrade widens the plugin's permissions and needs confirmation")
	// ErrInterrupted: the install's context ended (Ctrl-C) before it
	// finished; nothing was installed. The error also wraps ctx.Err().
	ErrInterrupted = errors.New("host: interrupted")
)
