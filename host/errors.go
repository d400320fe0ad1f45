package host

import (
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/host/toolerr"
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
	// ErrInterrupted: the install's context ended (Ctrl-C) before it
	// finished; nothing was installed. The error also wraps ctx.Err().
	ErrInterrupted = errors.New("host: interrupted")
	// ErrClosed: the Host was closed; it makes no more changes and runs
	// no more calls. Open a new one with New.
	ErrClosed = errors.New("host: the host is closed; open a new one with host.New")
)

// The errors below are the host's answers for a name it does not know.
// They are exported so that a client which cannot send a name at all (the
// control socket cannot carry an empty path segment) answers as the host
// would.

// NotInstalledError is the error for a plugin name that is not installed
// (errors.Is ErrNotInstalled).
func NotInstalledError(name string) error {
	return fmt.Errorf("%w: %q (see `toolhost plugin list`)", ErrNotInstalled, name)
}

// NoSuchToolError is the error of a call to a tool no plugin provides.
func NoSuchToolError(name string) *toolerr.Error {
	return toolerr.Errorf(toolerr.CodeToolNotFound, "no tool named %q is installed; list the available tools first", name)
}

// UndeclaredSecretError is the error for setting a secret the plugin does
// not declare (errors.Is ErrInvalidSetting).
func UndeclaredSecretError(plugin, secret string, declared []string) error {
	return fmt.Errorf("%w: plugin %s declares no secret %q (it declares %v)", ErrInvalidSetting, plugin, secret, declared)
}
