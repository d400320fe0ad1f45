package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// Options configure a Host. Store and Engine are required.
type Options struct {
	Store  *store.Store
	Engine engine.Engine
	Logger *slog.Logger
	// AllowUnsigned loads plugins that fail the trust policy. It exists for
	// plugin development only and is never on by default.
	AllowUnsigned bool
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// AllowPrivateNetwork lets plugins that were granted a host reach it
	// even at loopback, private or link-local addresses. Off by default.
	AllowPrivateNetwork bool
	// MaxArgumentBytes caps a call's arguments JSON; 0 means 1 MiB.
	MaxArgumentBytes int
	// MaxInFlight bounds the calls admitted at once, over every entry
	// point; MaxInFlightPerPlugin one plugin's share of them. Calls beyond
	// wait in a queue of at most MaxQueued calls, each until its deadline.
	// Zero means DefaultMaxInFlight, DefaultMaxInFlightPerPlugin and
	// DefaultMaxQueued; a negative limit is an error.
	MaxInFlight, MaxInFlightPerPlugin, MaxQueued int
	// Governor, when set, decides on every call between argument
	// validation and the sandbox (see Governor). SetGovernor replaces it.
	Governor Governor
	// Observers receive a CallRecord for every call (metrics, call log,
	// audit), in order.
	Observers []CallObserver
}

// Host serves the tools of the installed plugins. It is safe for
// concurrent use.
type Host struct {
	opts Options
	log  *slog.Logger
	adm  *admission
	// calls counts the calls inside Call, from arrival until their last
	// observer returned (InCalls).
	calls atomic.Int64
	gov   atomic.Pointer[governorBox]
	// closed is set once, by Close, with changeMu held: no change starts
	// after it (lockChanges) and no call runs (call).
	closed atomic.Bool

	// changeMu serializes every change of what is installed or trusted
	// (Install, Remove, trust and threshold changes, Reload): the checks
	// an install makes (tool names, rollback) and its store write happen
	// in one critical section. Lock order: changeMu before mu.
	changeMu sync.Mutex

	mu      sync.RWMutex
	trust   curator.TrustSet
	plugins map[string]*loaded // by plugin name
	tools   map[string]*toolRef
	// changed is closed and replaced whenever the tool list changes;
	// generation counts the changes.
	changed    chan struct{}
	generation uint64
	view       string // what clients last saw, see viewOf
}

// toolRef points a tool name at its plugin.
type toolRef struct {
	plugin *loaded
	tool   *plugin.Tool
	schema *plugin.Schema
}

// New opens a host over the plugins in the store. Plugins that fail
// verification are kept out (and quarantined when their bytes are damaged);
// the rest are served.
func New(opts Options) (*Host, error) {
	if opts.Store == nil || opts.Engine == nil {
		return nil, errors.New("host: Options.Store and Options.Engine are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxArgumentBytes <= 0 {
		opts.MaxArgumentBytes = 1 << 20
	}
	for _, l := range []struct {
		field string
		n     int
	}{{"MaxInFlight", opts.MaxInFlight}, {"MaxInFlightPerPlugin", opts.MaxInFlightPerPlugin}, {"MaxQueued", opts.MaxQueued}} {
		if l.n < 0 {
			return nil, fmt.Errorf("host: Options.%s %d is negative: use a positive limit, or 0 for the default", l.field, l.n)
		}
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxInFlightPerPlugin == 0 {
		opts.MaxInFlightPerPlugin = DefaultMaxInFlightPerPlugin
	}
	if opts.MaxQueued == 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Host{opts: opts, log: log, plugins: map[string]*loaded{}, tools: map[string]*toolRef{}, changed: make(chan struct{})}
	h.adm = newAdmission(opts.MaxInFlight, opts.MaxInFlightPerPlugin, opts.MaxQueued)
	h.SetGovernor(opts.Governor)
	if err := h.Reload(); err != nil {
		return nil, err
	}
	return h, nil
}

// Reload re-reads the trust store and every installed plugin, verifying
// each again. Compiled modules of unchanged plugins are kept.
func (h *Host) Reload() error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	return h.reload()
}

// lockChanges takes changeMu for a change, or refuses it with ErrClosed
// once the host is closed: a change after Close would load the plugins
// again into a host whose owner has let go of it (and of its engine).
func (h *Host) lockChanges() error {
	h.changeMu.Lock()
	if h.closed.Load() {
		h.changeMu.Unlock()
		return ErrClosed
	}
	return nil
}

// reload is Reload with changeMu held.
func (h *Host) reload() error {
	ts, err := h.opts.Store.TrustSet()
	if err != nil {
		return fmt.Errorf("host: read trust store: %w", err)
	}
	recs, err := h.opts.Store.Plugins()
	if err != nil {
		return fmt.Errorf("host: read plugins: %w", err)
	}
	quarantined, err := h.opts.Store.Quarantined()
	if err != nil {
		return fmt.Errorf("host: read quarantine: %w", err)
	}
	next := map[string]*loaded{}
	h.mu.RLock()
	prev := h.plugins
	h.mu.RUnlock()
	for _, rec := range recs {
		// Every load verifies the stored bytes again; only the compiled
		// module of an unchanged plugin is kept.
		l := h.loadRecord(rec, ts, prev[rec.Name])
		if old, ok := prev[rec.Name]; ok && l.integrityErr == nil && old.digest.Equal(l.digest) && old.settingsKey == l.settingsKey {
			l.adoptModule(old)
		}
		if l.integrityErr != nil {
			if _, already := quarantined[rec.Name]; !already {
				h.log.Error("plugin quarantined: its stored bytes do not verify", "plugin", rec.Name, "err", l.integrityErr)
				if err := h.opts.Store.Quarantine(rec.Name, l.integrityErr.Error()); err != nil {
					h.log.Error("cannot record quarantine", "plugin", rec.Name, "err", err)
				}
			}
		} else if !l.decision.Allowed() && !h.opts.AllowUnsigned {
			h.log.Warn("plugin unavailable", "plugin", rec.Name, "reason", l.decision.Err)
		}
		next[rec.Name] = l
	}
	h.swap(ts, next)
	return nil
}

// viewOf summarizes what clients see of the plugins (names, digests,
// availability), to tell whether a reload changed anything for them.
func (h *Host) viewOf(names []string, plugins map[string]*loaded) string {
	var b strings.Builder
	now := h.opts.Now()
	for _, name := range names {
		l := plugins[name]
		state := "ok"
		if err := l.available(now, h.opts.AllowUnsigned); err != nil {
			state = err.Error()
		}
		fmt.Fprintf(&b, "%s %s %s\n", name, l.digest, state)
	}
	return b.String()
}

func (h *Host) swap(ts curator.TrustSet, next map[string]*loaded) {
	tools := map[string]*toolRef{}
	names := make([]string, 0, len(next))
	for name := range next {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		l := next[name]
		if l.manifest == nil {
			continue
		}
		for i := range l.manifest.Tools {
			t := &l.manifest.Tools[i]
			if other, dup := tools[t.Name]; dup {
				h.log.Error("tool name conflict: keeping the first plugin's tool", "tool", t.Name, "kept", other.plugin.name, "skipped", name)
				continue
			}
			tools[t.Name] = &toolRef{plugin: l, tool: t, schema: l.schemas[i]}
		}
	}
	view := h.viewOf(names, next)
	h.mu.Lock()
	old := h.plugins
	h.trust, h.plugins, h.tools = ts, next, tools
	if view != h.view {
		// Only what clients can see counts: an install, remove or trust
		// change that leaves every plugin as it was notifies nobody.
		h.view = view
		close(h.changed)
		h.changed = make(chan struct{})
		h.generation++
	}
	h.mu.Unlock()
	for name, l := range old {
		if next[name] != l {
			l.unload()
		}
	}
}

// Changed returns a channel that is closed the next time the set of tools
// or their availability changes.
func (h *Host) Changed() <-chan struct{} {
	_, ch := h.Watch()
	return ch
}

// Watch returns the current change generation and a channel closed at the
// next change, read together so that no change can fall between them.
func (h *Host) Watch() (uint64, <-chan struct{}) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.generation, h.changed
}

// Close unloads every plugin. It does not close the store or the engine.
// Afterwards Call answers plugin_unavailable and every change (Install,
// Remove, Reload, trust and settings changes) returns ErrClosed; calls
// already running finish. Close may be called more than once.
func (h *Host) Close() {
	h.changeMu.Lock()
	defer h.changeMu.Unlock()
	if h.closed.Swap(true) {
		return
	}
	h.mu.Lock()
	old := h.plugins
	h.plugins, h.tools = map[string]*loaded{}, map[string]*toolRef{}
	h.mu.Unlock()
	for _, l := range old {
		l.unload()
	}
}

// ToolInfo describes one tool for listing.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Plugin      string          `json:"plugin"`
	Version     string          `json:"version"`
	// Optional, as signed (see plugin.Tool).
	OutputSchema  json.RawMessage     `json:"output_schema,omitempty"`
	Annotations   *plugin.Annotations `json:"annotations,omitempty"`
	NeedsApproval bool                `json:"needs_approval,omitempty"`
	// Icon is the plugin's signed icon (a data: URI, see plugin.ParseIcon).
	Icon string `json:"icon,omitempty"`
}

// Tools lists the tools of every available plugin, sorted by name.
func (h *Host) Tools() []ToolInfo {
	h.mu.RLock()
	defer h.mu.RUnlock()
	now := h.opts.Now()
	out := make([]ToolInfo, 0, len(h.tools))
	for name, ref := range h.tools {
		if ref.plugin.available(now, h.opts.AllowUnsigned) != nil {
			continue
		}
		out = append(out, ToolInfo{
			Name: name, Description: ref.tool.Description, Parameters: ref.tool.Parameters,
			Plugin: ref.plugin.name, Version: ref.plugin.manifest.Version,
			OutputSchema: ref.tool.OutputSchema, Annotations: ref.tool.Annotations, NeedsApproval: ref.tool.NeedsApproval,
			Icon: ref.plugin.manifest.Icon,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PluginInfo describes an installed plugin.
type PluginInfo struct {
	Name        string                    `json:"name"`
	Version     string                    `json:"version"`
	Description string                    `json:"description"`
	Digest      signing.Digest            `json:"digest"`
	Signers     []string                  `json:"signers"`
	Signatures  []curator.SignatureStatus `json:"signatures"`
	Tools       []string                  `json:"tools"`
	State       string                    `json:"state"` // "verified", "unavailable", "quarantined", "dev-unsigned"
	Reason      string                    `json:"reason,omitempty"`
	Limits      plugin.Limits             `json:"limits"`
	Permissions plugin.Permissions        `json:"permissions"`
	InstalledAt time.Time                 `json:"installed_at"`
	Manifest    json.RawMessage           `json:"manifest,omitempty"` // exact signed bytes
}

// Plugins lists installed plugins, sorted by name, with their verification
// state.
func (h *Host) Plugins() []PluginInfo {
	h.mu.RLock()
	defer h.mu.RUnlock()
	now := h.opts.Now()
	out := make([]PluginInfo, 0, len(h.plugins))
	for _, l := range h.plugins {
		out = append(out, l.info(now, h.opts.AllowUnsigned))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Plugin describes one installed plugin.
func (h *Host) Plugin(name string) (PluginInfo, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	l, ok := h.plugins[name]
	if !ok {
		return PluginInfo{}, NotInstalledError(name)
	}
	return l.info(h.opts.Now(), h.opts.AllowUnsigned), nil
}

// TrustSet returns the trust state the host is using.
func (h *Host) TrustSet() curator.TrustSet {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.trust
}

// Evaluate applies the current trust policy to a bundle.
func (h *Host) Evaluate(b *plugin.Bundle) curator.Decision {
	return curator.Evaluate(b.Digest(), b.Signatures, h.TrustSet(), h.opts.Now())
}
