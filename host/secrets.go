package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// ErrInvalidSetting is wrapped by a configuration value or secret the
// plugin's manifest does not accept.
var ErrInvalidSetting = errors.New("host: invalid plugin setting")

// SecretStatus is one secret a plugin declares, and whether it is set.
// It never holds the value.
type SecretStatus struct {
	Name   string   `json:"name"`
	Hosts  []string `json:"hosts"`
	Header string   `json:"header"`
	Set    bool     `json:"set"`
}

// loadSettings reads the operator's configuration and secrets of the
// plugin. They reach the engine in the Spec; the module key changes with
// them, so a new value takes effect on the next compile.
func (l *loaded) loadSettings(st *store.Store) {
	if l.manifest == nil {
		return
	}
	cfg, err := st.Config(l.name)
	if err != nil {
		l.settingsErr = fmt.Errorf("configuration: %w", err)
		return
	}
	var values map[string]string
	if len(l.manifest.Secrets) > 0 {
		if values, err = st.Secrets(l.name); err != nil {
			l.settingsErr = err
			return
		}
	}
	var secrets []engine.Secret
	for _, name := range l.manifest.SecretNames() {
		b := l.manifest.Secrets[name]
		secrets = append(secrets, engine.Secret{Name: name, Hosts: b.Hosts, Header: b.Header, Prefix: b.Prefix, Value: values[name]})
	}
	l.config, l.secrets = cfg, secrets
	if len(cfg) == 0 && len(values) == 0 {
		return
	}
	// The key is a hash over the values: it changes with them and shows
	// none of them.
	doc, _ := json.Marshal(struct {
		C map[string]string `json:"c"`
		S []engine.Secret   `json:"s"`
	}{cfg, secrets})
	sum := sha256.Sum256(doc)
	l.settingsKey = hex.EncodeToString(sum[:12])
}

// settingsError is the call error of a plugin whose settings cannot be read.
func (l *loaded) settingsError() *toolerr.Error {
	return toolerr.Errorf(toolerr.CodeUnavailable, "plugin %s: its configuration or secrets cannot be read: %v", l.name, l.settingsErr)
}

// pluginManifest returns the manifest of an installed, readable plugin.
func (h *Host) pluginManifest(name string) (*plugin.Manifest, error) {
	h.mu.RLock()
	l, ok := h.plugins[name]
	h.mu.RUnlock()
	if !ok {
		return nil, NotInstalledError(name)
	}
	if l.manifest == nil {
		return nil, fmt.Errorf("plugin %s is quarantined: %v; remove it and install it again", name, l.integrityErr)
	}
	return l.manifest, nil
}

// Config returns the configuration values set for an installed plugin.
func (h *Host) Config(name string) (map[string]string, error) {
	if _, err := h.pluginManifest(name); err != nil {
		return nil, err
	}
	return h.opts.Store.Config(name)
}

// SetConfig sets the values in set and removes the keys in unset, checks
// the result against the plugin's config schema, stores it and reloads the
// plugin with it. It returns the values now set.
func (h *Host) SetConfig(name string, set map[string]string, unset []string) (map[string]string, error) {
	if err := h.lockChanges(); err != nil {
		return nil, err
	}
	defer h.changeMu.Unlock()
	m, err := h.pluginManifest(name)
	if err != nil {
		return nil, err
	}
	cur, err := h.opts.Store.Config(name)
	if err != nil {
		return nil, err
	}
	for _, k := range unset {
		if _, ok := cur[k]; !ok {
			return nil, fmt.Errorf("%w: plugin %s has no config value %q set (see `toolhost plugin config %s`)", store.ErrNotFound, name, k, name)
		}
		delete(cur, k)
	}
	maps.Copy(cur, set)
	if err := m.ValidateConfig(cur); err != nil {
		return nil, fmt.Errorf("%w: plugin %s: %v", ErrInvalidSetting, name, err)
	}
	if err := h.opts.Store.SetConfig(name, cur); err != nil {
		return nil, err
	}
	return cur, h.reload()
}

// Secrets lists the secrets an installed plugin declares and which are set.
func (h *Host) Secrets(name string) ([]SecretStatus, error) {
	m, err := h.pluginManifest(name)
	if err != nil {
		return nil, err
	}
	set, err := h.opts.Store.SecretNames(name)
	if err != nil {
		return nil, err
	}
	out := []SecretStatus{}
	for _, n := range m.SecretNames() {
		b := m.Secrets[n]
		out = append(out, SecretStatus{Name: n, Hosts: b.Hosts, Header: b.Header, Set: slices.Contains(set, n)})
	}
	return out, nil
}

// SetSecret stores the value of a secret the plugin declares, encrypted,
// and reloads the plugin with it.
func (h *Host) SetSecret(name, secret, value string) error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	m, err := h.pluginManifest(name)
	if err != nil {
		return err
	}
	if _, ok := m.Secrets[secret]; !ok {
		return UndeclaredSecretError(name, secret, m.SecretNames())
	}
	if err := plugin.ValidSecretValue(value); err != nil {
		return fmt.Errorf("%w: secret %s: %v", ErrInvalidSetting, secret, err)
	}
	if err := h.opts.Store.SetSecret(name, secret, value); err != nil {
		return err
	}
	return h.reload()
}

// RemoveSecret removes a secret's value; the plugin's requests that ask
// for it fail until it is set again.
func (h *Host) RemoveSecret(name, secret string) error {
	if err := h.lockChanges(); err != nil {
		return err
	}
	defer h.changeMu.Unlock()
	if _, err := h.pluginManifest(name); err != nil {
		return err
	}
	if err := h.opts.Store.RemoveSecret(name, secret); err != nil {
		return err
	}
	return h.reload()
}
