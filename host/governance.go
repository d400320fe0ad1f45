package host

import (
	"context"
	"sort"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// PolicyHook is one hook of an installed policy plugin (a plugin whose
// signed manifest declares hooks).
type PolicyHook struct {
	Plugin string
	Hook   plugin.Hook
	// Call runs export in the policy plugin's sandbox, under that plugin's
	// signed limits. A policy plugin that cannot run now (unverified,
	// untrusted, quarantined) answers plugin_unavailable, so its hooks deny
	// (fail closed) until it is fixed or removed.
	Call func(ctx context.Context, export string, input []byte) ([]byte, error)
}

// PolicyHooks lists the hooks of every installed plugin, in no particular
// order (the Governor orders them).
func (h *Host) PolicyHooks() []PolicyHook {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []PolicyHook
	for _, l := range h.plugins {
		if l.manifest == nil {
			out = append(out, quarantinedHooks(l)...)
			continue
		}
		for _, hk := range l.manifest.Hooks {
			out = append(out, PolicyHook{Plugin: l.name, Hook: hk, Call: func(ctx context.Context, export string, input []byte) ([]byte, error) {
				// The hook runs on the policy plugin installed now, which
				// must be the one listed: a reload since (a revocation, a
				// removal, an upgrade) made l an unloaded copy whose trust
				// decision is no longer true.
				cur, err := h.samePlugin(l)
				if err != nil {
					return nil, err
				}
				if err := cur.available(h.opts.Now(), h.opts.AllowUnsigned); err != nil {
					return nil, toolerr.Errorf(toolerr.CodeUnavailable, "policy plugin %s cannot run: %v", l.name, err)
				}
				mod, err := cur.module(ctx, h.opts.Engine, h.opts.AllowPrivateNetwork)
				if err != nil {
					return nil, err
				}
				return mod.Call(ctx, export, input)
			}})
		}
	}
	return out
}

// samePlugin returns the plugin installed now under l's name when it is
// l's bundle (same digest).
func (h *Host) samePlugin(l *loaded) (*loaded, *toolerr.Error) {
	h.mu.RLock()
	cur := h.plugins[l.name]
	h.mu.RUnlock()
	if h.closed.Load() {
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "policy plugin %s cannot run: the host serving it is closed", l.name)
	}
	if cur == nil || !cur.digest.Equal(l.digest) {
		return nil, toolerr.Errorf(toolerr.CodeUnavailable, "policy plugin %s was removed or replaced while the call was being decided, so its hook cannot answer for it; call again", l.name)
	}
	return cur, nil
}

// quarantinedHooks are the hooks a quarantined plugin's stored manifest
// still names, each answering plugin_unavailable, so that the tools a
// damaged policy plugin guarded are refused (hooks fail closed) rather than
// run unguarded until an operator removes or reinstalls it. The manifest
// is read for nothing else: its bytes did not verify. A manifest too
// damaged to parse names no hooks.
func quarantinedHooks(l *loaded) []PolicyHook {
	m, err := plugin.ParseManifest(l.record.Manifest)
	if err != nil {
		return nil
	}
	var out []PolicyHook
	for _, hk := range m.Hooks {
		out = append(out, PolicyHook{Plugin: l.name, Hook: hk, Call: func(context.Context, string, []byte) ([]byte, error) {
			return nil, toolerr.Errorf(toolerr.CodeUnavailable, "policy plugin %s is quarantined (%v): remove it and install it again", l.name, l.integrityErr)
		}})
	}
	return out
}

// Store is the store the host serves from (for the parts of toolhost that
// keep their own records in it, such as the approval policy).
func (h *Host) Store() *store.Store { return h.opts.Store }

// quarantinedToolError answers a call to a tool that no verified plugin
// provides but a quarantined plugin's stored manifest names: the tool is
// installed and cannot run, which "no tool named … is installed" hid
// (the operator was sent to list tools, not to reinstall the plugin). As
// for hooks, the damaged manifest is read only for the tool's name.
func (h *Host) quarantinedToolError(tool string) *toolerr.Error {
	h.mu.RLock()
	plugins := h.plugins
	h.mu.RUnlock()
	names := make([]string, 0, len(plugins))
	for name, l := range plugins {
		if l.integrityErr != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		l := plugins[name]
		m, err := plugin.ParseManifest(l.record.Manifest)
		if err != nil {
			continue
		}
		for _, t := range m.Tools {
			if t.Name == tool {
				return toolerr.Errorf(toolerr.CodeUnavailable, "tool %q cannot run: plugin %s is quarantined (%v): remove it and install it again", tool, name, l.integrityErr)
			}
		}
	}
	return nil
}
