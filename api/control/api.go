// Package control is how the toolhost CLI manages a host: install, remove,
// list, trust changes and calls. badger lets one process hold the store, so
// the process that holds it (`toolhost serve`, or `toolhost mcp` when it
// started first) serves this API on a unix socket in the toolhost home, and
// every other toolhost process talks to it through Client. Local runs the
// same API in-process when no host is running.
//
// Trust model: the socket is created 0600 inside the 0700 home, and the
// server also refuses connections whose peer is another user (SO_PEERCRED).
// Anyone who can reach it can do what the operator can.
package control

import (
	"context"
	"encoding/json"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
)

// API is the management surface of a host. Errors keep their kind across
// the socket: *toolerr.Error for calls, and the host, store and curator
// sentinels (errors.Is works on a Client's errors as on Local's).
type API interface {
	Install(ctx context.Context, b *plugin.Bundle, opts host.InstallOptions) (host.InstallReport, error)
	Remove(ctx context.Context, name string) error
	Plugins(ctx context.Context) ([]host.PluginInfo, error)
	Plugin(ctx context.Context, name string) (host.PluginInfo, error)
	Evaluate(ctx context.Context, b *plugin.Bundle) (curator.Decision, error)
	Tools(ctx context.Context) ([]host.ToolInfo, error)
	Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error)
	TrustSet(ctx context.Context) (curator.TrustSet, error)
	AddTrustedKey(ctx context.Context, name string, key signing.PublicKey) error
	RemoveTrustedKey(ctx context.Context, id signing.KeyID) error
	Revoke(ctx context.Context, id signing.KeyID) error
	Unrevoke(ctx context.Context, id signing.KeyID) error
	SetThreshold(ctx context.Context, n int) error
}

// Local is the API over a host in this process.
type Local struct{ H *host.Host }

var _ API = Local{}

func (l Local) Install(ctx context.Context, b *plugin.Bundle, opts host.InstallOptions) (host.InstallReport, error) {
	return l.H.Install(ctx, b, opts)
}
func (l Local) Remove(_ context.Context, name string) error { return l.H.Remove(name) }
func (l Local) Plugins(context.Context) ([]host.PluginInfo, error) {
	return l.H.Plugins(), nil
}
func (l Local) Plugin(_ context.Context, name string) (host.PluginInfo, error) {
	return l.H.Plugin(name)
}
func (l Local) Evaluate(_ context.Context, b *plugin.Bundle) (curator.Decision, error) {
	return l.H.Evaluate(b), nil
}
func (l Local) Tools(context.Context) ([]host.ToolInfo, error) { return l.H.Tools(), nil }
func (l Local) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	return l.H.Call(ctx, tool, args)
}
func (l Local) TrustSet(context.Context) (curator.TrustSet, error) { return l.H.TrustSet(), nil }
func (l Local) AddTrustedKey(_ context.Context, name string, key signing.PublicKey) error {
	return l.H.AddTrustedKey(name, key)
}
func (l Local) RemoveTrustedKey(_ context.Context, id signing.KeyID) error {
	return l.H.RemoveTrustedKey(id)
}
func (l Local) Revoke(_ context.Context, id signing.KeyID) error   { return l.H.Revoke(id) }
func (l Local) Unrevoke(_ context.Context, id signing.KeyID) error { return l.H.Unrevoke(id) }
func (l Local) SetThreshold(_ context.Context, n int) error        { return l.H.SetThreshold(n) }
