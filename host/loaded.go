package host

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// loaded is one installed plugin as the host sees it: verified (or not,
// with the reason), and compiled on first use.
type loaded struct {
	name        string
	digest      signing.Digest
	record      store.PluginRecord
	manifest    *plugin.Manifest
	schemas     []*plugin.Schema
	wasm        []byte
	sigs        []signing.Signature
	installedAt time.Time

	// integrityErr is set when the stored bytes do not verify: the plugin
	// is quarantined and never runs.
	integrityErr error

	mu       sync.Mutex
	decision curator.Decision
	// expiries of the signatures that count, for cheap re-checks per call.
	validUntil time.Time
	mod        engine.Module
	compileErr *toolerr.Error

	// The operator's settings (loadSettings): config values, the declared
	// secrets with their values, a hash of both for the module key, or why
	// they cannot be read.
	config      map[string]string
	secrets     []engine.Secret
	settingsKey string
	settingsErr error
}

// loadRecord re-verifies a stored plugin from its exact bytes. prev is
// what the host loaded under that name before (or nil): when it holds the
// same wasm, the store's copy is verified in place and prev's bytes are
// kept, so that the host holds each plugin's wasm once, however often it
// reloads.
func (h *Host) loadRecord(rec store.PluginRecord, ts curator.TrustSet, prev *loaded) *loaded {
	l := &loaded{name: rec.Name, digest: rec.Digest, record: rec, installedAt: rec.InstalledAt}
	l.integrityErr = l.verifyIntegrity(h.opts.Store, prev.heldWasm(rec.WasmSHA256))
	if l.integrityErr == nil {
		l.evaluate(ts, h.opts.Now())
		l.loadSettings(h.opts.Store)
	}
	return l
}

// heldWasm is l's wasm when l verified it and its sha256 (hex) is sha,
// nil otherwise (l may be nil).
func (l *loaded) heldWasm(sha string) []byte {
	if l == nil || l.integrityErr != nil || l.wasm == nil || l.record.WasmSHA256 != sha {
		return nil
	}
	return l.wasm
}

// verifyIntegrity checks the stored plugin. held, when not nil, is the
// plugin's wasm as the host already holds it (verified against the same
// sha256): the stored copy is checked without being read into memory again.
func (l *loaded) verifyIntegrity(st *store.Store, held []byte) error {
	wasm := held
	var err error
	if held != nil {
		err = st.CheckBlob(l.record.WasmSHA256)
	} else {
		wasm, err = st.Blob(l.record.WasmSHA256)
	}
	if err != nil {
		return err
	}
	sigs, err := plugin.DecodeSignaturesJSON(l.record.Signatures)
	if err != nil {
		return fmt.Errorf("stored signatures: %w", err)
	}
	b, err := plugin.Open(l.record.Manifest, wasm, sigs)
	if err != nil {
		return fmt.Errorf("stored manifest: %w", err)
	}
	d := b.Digest()
	if subtle.ConstantTimeCompare(d[:], l.record.Digest[:]) != 1 {
		return fmt.Errorf("stored digest %s does not match the stored bytes (%s)", l.record.Digest, d)
	}
	sum := b.WasmSHA256()
	if hex.EncodeToString(sum[:]) != l.record.WasmSHA256 {
		return fmt.Errorf("stored wasm hash mismatch")
	}
	m := b.Manifest()
	schemas := make([]*plugin.Schema, len(m.Tools))
	for i, t := range m.Tools {
		if schemas[i], err = plugin.CompileSchema(t.Parameters); err != nil {
			return fmt.Errorf("tool %s: %w", t.Name, err)
		}
	}
	l.manifest, l.schemas, l.wasm, l.sigs = m, schemas, wasm, sigs
	return nil
}

// evaluate applies the trust policy and remembers until when it holds.
func (l *loaded) evaluate(ts curator.TrustSet, now time.Time) {
	if l.integrityErr != nil {
		return
	}
	d := curator.Evaluate(l.digest, l.sigs, ts, now)
	var until time.Time
	if d.Allowed() {
		// The decision holds until enough counting signatures expire.
		var exp []time.Time
		for i, s := range d.Signatures {
			if s.State == curator.StateTrusted && !l.sigs[i].Expires.IsZero() {
				exp = append(exp, l.sigs[i].Expires)
			}
		}
		counting := len(d.Signers)
		if counting-len(exp) < d.Threshold && len(exp) > 0 {
			// The plugin stays valid until the (counting-threshold+1)-th
			// earliest expiry passes.
			slices.SortFunc(exp, time.Time.Compare)
			until = exp[counting-d.Threshold]
		}
	}
	l.mu.Lock()
	l.decision, l.validUntil = d, until
	l.mu.Unlock()
}

// available returns nil when the plugin may run now.
func (l *loaded) available(now time.Time, allowUnsigned bool) error {
	if l.integrityErr != nil {
		return fmt.Errorf("quarantined: %v; remove it and install it again", l.integrityErr)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if allowUnsigned {
		return nil
	}
	if l.decision.Err != nil {
		return l.decision.Err
	}
	if !l.validUntil.IsZero() && !now.Before(l.validUntil) {
		return fmt.Errorf("%w: ask the curator to sign it again", curator.ErrExpired)
	}
	return nil
}

// module compiles the plugin on first use. A compile that ctx cut short
// is not remembered: the next call tries again.
func (l *loaded) module(ctx context.Context, eng engine.Engine, allowPrivate bool) (engine.Module, *toolerr.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mod != nil {
		return l.mod, nil
	}
	if l.compileErr != nil {
		return nil, l.compileErr
	}
	if l.settingsErr != nil {
		return nil, l.settingsError()
	}
	mod, err := eng.Compile(ctx, l.spec(allowPrivate))
	if err != nil {
		if ctx.Err() != nil {
			return nil, engineError(err, ctx, ctx, time.Duration(l.manifest.Limits.Effective().TimeoutMS)*time.Millisecond)
		}
		var te *toolerr.Error
		if errors.As(err, &te) && te.Code == toolerr.CodeMemoryLimit {
			// The engine's memory budget for all sandboxes stopped the
			// load: a state of the moment, not of the module (a module
			// that alone needs too much is invalid_module). Not kept.
			return nil, te
		}
		if errors.As(err, &te) {
			l.compileErr = te
		} else {
			l.compileErr = toolerr.Errorf(toolerr.CodeInvalidModule, "plugin %s: %v", l.name, err)
		}
		return nil, l.compileErr
	}
	l.mod = mod
	return mod, nil
}

func (l *loaded) spec(allowPrivate bool) engine.Spec {
	key := l.digest.String()
	if l.settingsKey != "" {
		key += "+" + l.settingsKey // a new config or secret is a new module
	}
	return engine.Spec{
		Key: key, Name: l.name, Wasm: l.wasm, Config: l.config, Secrets: l.secrets,
		Limits: l.manifest.Limits.Effective(), Permissions: l.manifest.Permissions, Exports: l.manifest.Exports(),
		AllowPrivateNetwork: allowPrivate, ReuseInstances: l.manifest.ReuseInstances,
	}
}

// adoptModule takes over old's compiled module (same digest), so a reload
// does not recompile unchanged plugins.
func (l *loaded) adoptModule(old *loaded) {
	old.mu.Lock()
	mod := old.mod
	old.mod = nil
	old.mu.Unlock()
	l.mu.Lock()
	l.mod = mod
	l.mu.Unlock()
}

func (l *loaded) unload() {
	l.mu.Lock()
	mod := l.mod
	l.mod = nil
	l.mu.Unlock()
	if mod != nil {
		go mod.Close(context.Background()) // waits for in-flight calls
	}
}

func (l *loaded) info(now time.Time, allowUnsigned bool) PluginInfo {
	pi := PluginInfo{Name: l.name, Digest: l.digest, InstalledAt: l.installedAt, Version: l.record.Version, Manifest: l.record.Manifest}
	if l.manifest != nil {
		pi.Description = l.manifest.Description
		pi.Limits = l.manifest.Limits.Effective()
		pi.Permissions = l.manifest.Permissions
		for _, t := range l.manifest.Tools {
			pi.Tools = append(pi.Tools, t.Name)
		}
	}
	l.mu.Lock()
	pi.Signers = l.decision.Signers
	pi.Signatures = l.decision.Signatures
	l.mu.Unlock()
	switch err := l.available(now, false); {
	case l.integrityErr != nil:
		pi.State, pi.Reason = "quarantined", err.Error()
	case err == nil:
		pi.State = "verified"
	case allowUnsigned:
		pi.State, pi.Reason = "dev-unsigned", err.Error()
	default:
		pi.State, pi.Reason = "unavailable", err.Error()
	}
	return pi
}
