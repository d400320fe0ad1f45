package host

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// InstallOptions adjust one install.
type InstallOptions struct {
	// AllowDowngrade installs a version lower than the highest ever
	// installed under the same name.
	AllowDowngrade bool
	// AcceptWidening installs an upgrade that grants the plugin new
	// permissions. Without it such an install fails with ErrWidening and
	// the report lists the changes, so the caller can ask the operator.
	AcceptWidening bool
}

// InstallReport says what an install did.
type InstallReport struct {
	Name     string
	Version  string
	Digest   signing.Digest
	Decision curator.Decision
	// Previous is the plugin this install replaced, if any.
	Previous *PluginInfo
	// Unchanged is true when the exact same plugin, with the same
	// signatures, was already installed.
	Unchanged bool
	// SignaturesUpdated is true when the same content was installed with
	// other signatures: the new ones passed the trust policy and replaced
	// the stored ones (a curator signed it again after an expiry or a
	// revocation). Nothing else changed.
	SignaturesUpdated bool
	// Changes from the previous version (permissions, limits, tools).
	Changes []plugin.Change
}

// Install verifies a bundle against the trust policy, checks its version
// against the rollback high-water mark, checks that its module compiles
// and exports every tool, and stores it durably. The plugin's tools are
// callable when Install returns.
//
// Installs are serialized with every other change: the trust, tool-name
// and rollback checks run again inside the critical section that writes
// the store, so of two concurrent installs whose tools collide exactly one
// succeeds, and a version accepted after a higher one was is refused.
// Compiling the module runs inside it too: wazero's shared compilation
// cache miscounts concurrent compiles of the same module (wazero#2459) and
// a concurrent install of identical wasm crashed the in-process engine.
func (h *Host) Install(ctx context.Context, b *plugin.Bundle, opts InstallOptions) (InstallReport, error) {
	if b == nil {
		return InstallReport{}, fmt.Errorf("%w: Install was given no bundle; make one with plugin.Decode (a .plugin file) or plugin.Open", plugin.ErrInvalidBundle)
	}
	if err := h.lockChanges(); err != nil {
		return InstallReport{}, err
	}
	defer h.changeMu.Unlock()
	rep, err := h.checkInstall(b, opts)
	if err != nil || rep.Unchanged {
		return rep, err
	}
	if rep.SignaturesUpdated {
		return rep, h.replaceSignatures(ctx, b)
	}
	if err := h.checkModule(ctx, b); err != nil {
		return rep, err
	}
	m := b.Manifest()
	// The last moment an interrupted install can still change nothing.
	if err := ctx.Err(); err != nil {
		return rep, interrupted(m, err)
	}
	sum := b.WasmSHA256()
	rec := store.PluginRecord{
		Name: m.Name, Version: m.Version, Digest: rep.Digest, Manifest: b.ManifestBytes,
		WasmSHA256: hex.EncodeToString(sum[:]), Signatures: plugin.EncodeSignaturesJSON(b.Signatures),
		InstalledAt: h.opts.Now().UTC().Truncate(time.Second),
	}
	mark, err := h.nextHighWater(m, rep.Digest)
	if err != nil {
		return rep, err
	}
	if err := h.opts.Store.PutPlugin(rec, b.Wasm, mark); err != nil {
		return rep, err
	}
	return rep, h.reload()
}

// checkInstall makes every check of Install that depends on what is
// installed and trusted now.
func (h *Host) checkInstall(b *plugin.Bundle, opts InstallOptions) (InstallReport, error) {
	m := b.Manifest()
	rep := InstallReport{Name: m.Name, Version: m.Version, Digest: b.Digest()}
	rep.Decision = h.Evaluate(b)
	if !rep.Decision.Allowed() && !h.opts.AllowUnsigned {
		return rep, fmt.Errorf("%w: %w", ErrNotAllowed, rep.Decision.Err)
	}
	if prev, err := h.Plugin(m.Name); err == nil {
		rep.Previous = &prev
		if prev.Digest.Equal(rep.Digest) && prev.State != "quarantined" {
			// The same content: installed already, so the rollback,
			// tool-name and widening checks hold. Only the signatures
			// can differ, and they passed the policy above.
			rep.Unchanged = h.sameSignatures(m.Name, b.Signatures)
			rep.SignaturesUpdated = !rep.Unchanged
			return rep, nil
		}
		if old, err := plugin.ParseManifest(prev.Manifest); err == nil {
			rep.Changes = plugin.Diff(old, m)
		}
	}
	if err := h.checkVersion(m, rep.Digest, opts); err != nil {
		return rep, err
	}
	if err := h.checkToolNames(m); err != nil {
		return rep, err
	}
	if plugin.Widens(rep.Changes) && !opts.AcceptWidening {
		return rep, fmt.Errorf("%w: %s %s asks for permissions %s did not have", ErrWidening, m.Name, m.Version, rep.Previous.Version)
	}
	return rep, nil
}

// sameSignatures reports whether the installed plugin name carries exactly
// sigs, in any order.
func (h *Host) sameSignatures(name string, sigs []signing.Signature) bool {
	h.mu.RLock()
	l, ok := h.plugins[name]
	h.mu.RUnlock()
	if !ok || len(l.sigs) != len(sigs) {
		return false
	}
	// A time.Time is no map key (its location is a pointer): the expiry
	// counts by its instant.
	type sigKey struct {
		key     signing.KeyID
		expires int64
		sig     [len(signing.Signature{}.Sig)]byte
	}
	keyOf := func(s signing.Signature) sigKey {
		return sigKey{key: s.KeyID, expires: s.Expires.Unix(), sig: s.Sig}
	}
	count := map[sigKey]int{}
	for _, s := range l.sigs {
		count[keyOf(s)]++
	}
	for _, s := range sigs {
		if count[keyOf(s)] == 0 {
			return false
		}
		count[keyOf(s)]--
	}
	return true
}

// replaceSignatures stores the signatures of b over the installed plugin
// with the same digest, and reloads it so they count at once.
func (h *Host) replaceSignatures(ctx context.Context, b *plugin.Bundle) error {
	m := b.Manifest()
	if err := ctx.Err(); err != nil {
		return interrupted(m, err)
	}
	if err := h.opts.Store.SetSignatures(m.Name, b.Digest(), plugin.EncodeSignaturesJSON(b.Signatures)); err != nil {
		return err
	}
	return h.reload()
}

// compareVersions orders versions a and b (-1, 0, +1; 0 also for versions
// that differ only in build metadata); ok is false unless both parse.
func compareVersions(a, b string) (c int, ok bool) {
	va, errA := plugin.ParseVersion(a)
	vb, errB := plugin.ParseVersion(b)
	if errA != nil || errB != nil {
		return 0, false
	}
	return va.Compare(vb), true
}

// samePrecedence reports whether versions a and b parse and order equal.
func samePrecedence(a, b string) bool { c, ok := compareVersions(a, b); return ok && c == 0 }

func higher(a, b string) bool { c, ok := compareVersions(a, b); return ok && c > 0 }

// checkVersion applies the rollback rule (RATIONALE.md, "Rollback
// protection"): above the high-water mark installs; the mark's version
// installs only with the mark's digest (the same content again, after a
// remove or a deliberate downgrade); other content at that version, or a
// lower version, needs AllowDowngrade.
func (h *Host) checkVersion(m *plugin.Manifest, digest signing.Digest, opts InstallOptions) error {
	hw, ok, err := h.opts.Store.HighWater(m.Name)
	if err != nil || !ok || opts.AllowDowngrade {
		return err
	}
	hv, err := plugin.ParseVersion(hw.Version)
	if err != nil {
		return nil // a damaged mark never blocks; the new version replaces it
	}
	v, _ := plugin.ParseVersion(m.Version)
	switch c := v.Compare(hv); {
	case c < 0:
		return fmt.Errorf("%w: %s %s is older than %s, the highest version installed before (possibly since removed); pass --allow-downgrade if you really mean to roll back", ErrDowngrade, m.Name, m.Version, hw.Version)
	case c > 0:
		return nil
	}
	prev, perr := h.opts.Store.Plugin(m.Name)
	installed := perr == nil
	markDigest := hw.Digest
	if !hw.HasDigest() && installed && samePrecedence(prev.Version, hw.Version) {
		// A mark from before marks held digests: the plugin installed at
		// its version is the content it stands for.
		markDigest = prev.Digest
	}
	if (markDigest == signing.Digest{}) || markDigest.Equal(digest) {
		// The content last installed at this version, or a mark that
		// does not know its content (accepted as before digests).
		return nil
	}
	const fix = "a curator must release a new version, or pass --allow-downgrade to replace it"
	isInstalled := installed && prev.Digest.Equal(markDigest)
	switch {
	case isInstalled && m.Version == prev.Version:
		return fmt.Errorf("%w: %s %s is already installed with different content (digest %s, this bundle %s); %s", ErrDowngrade, m.Name, m.Version, markDigest.Short(), digest.Short(), fix)
	case isInstalled:
		// 1.0.0+build over 1.0.0: build metadata does not order
		// versions, so this is the installed version, rebuilt.
		return fmt.Errorf("%w: %s %s has the same version precedence as the installed %s %s (build metadata after '+' does not count) but different content; %s", ErrDowngrade, m.Name, m.Version, m.Name, prev.Version, fix)
	case m.Version == hw.Version:
		return fmt.Errorf("%w: a different %s %s (digest %s, this bundle %s) was installed before; %s", ErrDowngrade, m.Name, m.Version, markDigest.Short(), digest.Short(), fix)
	default:
		return fmt.Errorf("%w: %s %s has the same version precedence as %s %s (digest %s), installed before (build metadata after '+' does not count), but different content; %s", ErrDowngrade, m.Name, m.Version, m.Name, hw.Version, markDigest.Short(), fix)
	}
}

// nextHighWater is the high-water mark after installing version
// m.Version with digest: that version and digest unless the mark is
// higher. At the mark's version the digest follows the content installed
// last (a replacement needed AllowDowngrade); below it the mark stays.
func (h *Host) nextHighWater(m *plugin.Manifest, digest signing.Digest) (store.HighWaterMark, error) {
	next := store.HighWaterMark{Version: m.Version, Digest: digest}
	hw, ok, err := h.opts.Store.HighWater(m.Name)
	if err != nil || !ok {
		return next, err
	}
	if higher(hw.Version, m.Version) {
		return hw, nil
	}
	return next, nil
}

func (h *Host) checkToolNames(m *plugin.Manifest) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, t := range m.Tools {
		for name, ref := range h.tools {
			if ref.plugin.name != m.Name && strings.EqualFold(name, t.Name) {
				return fmt.Errorf("%w: tool %q is already provided by plugin %s; remove that plugin first or rename the tool", ErrToolConflict, t.Name, ref.plugin.name)
			}
		}
	}
	return nil
}

// checkModule compiles the module once (filling the compilation cache) and
// makes sure it is acceptable.
func (h *Host) checkModule(ctx context.Context, b *plugin.Bundle) error {
	m := b.Manifest()
	l := &loaded{name: m.Name, digest: b.Digest(), manifest: m, wasm: b.Wasm}
	mod, err := h.opts.Engine.Compile(ctx, l.spec(h.opts.AllowPrivateNetwork))
	if err != nil {
		// The compile failed because the caller went away (Ctrl-C), not
		// because of the module: say so, not "refused".
		if cerr := ctx.Err(); cerr != nil {
			return interrupted(m, cerr)
		}
		var se *toolerr.Error
		if errors.As(err, &se) && se.Code == toolerr.CodePermissionDenied {
			return fmt.Errorf("%w: %s; create it, or get a build of the plugin that grants an existing directory", ErrGrantUnavailable, se.Message)
		}
		if errors.As(err, &se) && se.Code == toolerr.CodeMemoryLimit {
			// The sandboxes' memory budget stopped the compile: the
			// module was not refused, the install can be tried again.
			return fmt.Errorf("%s was not installed: %w", m.Name, err)
		}
		if errors.As(err, &se) {
			return fmt.Errorf("%w: %s", ErrInvalidModule, se.Message)
		}
		return fmt.Errorf("%w: %v", ErrInvalidModule, err)
	}
	return mod.Close(ctx)
}

// interrupted is the error of an install whose context ended with cause.
func interrupted(m *plugin.Manifest, cause error) error {
	return fmt.Errorf("%w: installing %s %s stopped before it finished (%w); nothing was installed, run the command again to install it",
		ErrInterrupted, m.Name, m.Version, cause)
}

// Remove uninstalls a plugin. Its rollback high-water mark is kept.
func (h *Host) Remove(name string) error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	if err := h.opts.Store.RemovePlugin(name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return NotInstalledError(name)
		}
		return err
	}
	// Its configuration and credentials went with it (RemovePlugin).
	return h.reload()
}

// AddTrustedKey trusts a curator key and re-evaluates every plugin.
func (h *Host) AddTrustedKey(name string, key signing.PublicKey) error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	if err := h.opts.Store.AddTrustedKey(curator.TrustedKey{Name: name, Key: key, AddedAt: h.opts.Now()}); err != nil {
		return err
	}
	return h.reload()
}

// RemoveTrustedKey stops trusting a key and re-evaluates every plugin.
func (h *Host) RemoveTrustedKey(id signing.KeyID) error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	if err := h.opts.Store.RemoveTrustedKey(id); err != nil {
		return err
	}
	return h.reload()
}

// Revoke revokes a key; plugins that relied on it become unavailable now.
func (h *Host) Revoke(id signing.KeyID) error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	if err := h.opts.Store.Revoke(id, h.opts.Now()); err != nil {
		return err
	}
	return h.reload()
}

// Unrevoke lifts a revocation.
func (h *Host) Unrevoke(id signing.KeyID) error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	if err := h.opts.Store.Unrevoke(id); err != nil {
		return err
	}
	return h.reload()
}

// SetThreshold sets how many distinct trusted curators must have signed.
func (h *Host) SetThreshold(n int) error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	if err := h.opts.Store.SetThreshold(n); err != nil {
		return err
	}
	return h.reload()
}
