package control

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/store"
)

// Settings is the operator's side of plugin configuration and secrets. The
// process holding the store serves it (Governed, which audits every change
// by key name, never by value); Client reaches it over the socket.
type Settings interface {
	Config(ctx context.Context, plugin string) (map[string]string, error)
	SetConfig(ctx context.Context, plugin string, set map[string]string, unset []string) (map[string]string, error)
	Secrets(ctx context.Context, plugin string) ([]host.SecretStatus, error)
	SetSecret(ctx context.Context, plugin, name, value string) error
	RemoveSecret(ctx context.Context, plugin, name string) error
}

var (
	_ Settings = (*Governed)(nil)
	_ Settings = (*Client)(nil)
)

func (g *Governed) Config(_ context.Context, plugin string) (map[string]string, error) {
	return g.H.Config(plugin)
}

func (g *Governed) SetConfig(_ context.Context, plugin string, set map[string]string, unset []string) (map[string]string, error) {
	var keys []string
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	detail := "set " + strings.Join(keys, ", ")
	if len(unset) > 0 {
		detail += "; unset " + strings.Join(unset, ", ")
	}
	var cfg map[string]string
	err := g.journaled(change("config_set", plugin, detail, func() (err error) {
		cfg, err = g.H.SetConfig(plugin, set, unset)
		return err
	}))
	return cfg, err
}

func (g *Governed) Secrets(_ context.Context, plugin string) ([]host.SecretStatus, error) {
	return g.H.Secrets(plugin)
}

func (g *Governed) SetSecret(_ context.Context, plugin, name, value string) error {
	return g.journaled(change("secret_set", plugin, "secret "+name, func() error { return g.H.SetSecret(plugin, name, value) }))
}

func (g *Governed) RemoveSecret(_ context.Context, plugin, name string) error {
	return g.journaled(change("secret_remove", plugin, "secret "+name, func() error { return g.H.RemoveSecret(plugin, name) }))
}

// configChange is the body of PUT /v1/plugins/{name}/config.
type configChange struct {
	Set   map[string]string `json:"set,omitempty"`
	Unset []string          `json:"unset,omitempty"`
}

// maxSettingBody bounds a settings request (a secret is at most 8 KiB).
const maxSettingBody = 64 << 10

func decodeSetting(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxSettingBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return nil
}

// handleSettings adds the settings routes to mux.
func handleSettings(mux *http.ServeMux, s Settings, reply func(http.ResponseWriter, any, error)) {
	mux.HandleFunc("GET /v1/plugins/{name}/config", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.Config(r.Context(), r.PathValue("name"))
		reply(w, v, err)
	})
	mux.HandleFunc("PUT /v1/plugins/{name}/config", func(w http.ResponseWriter, r *http.Request) {
		var c configChange
		if err := decodeSetting(r, &c); err != nil {
			reply(w, nil, err)
			return
		}
		v, err := s.SetConfig(r.Context(), r.PathValue("name"), c.Set, c.Unset)
		reply(w, v, err)
	})
	mux.HandleFunc("GET /v1/plugins/{name}/secrets", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.Secrets(r.Context(), r.PathValue("name"))
		reply(w, v, err)
	})
	mux.HandleFunc("PUT /v1/plugins/{name}/secrets/{secret}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Value string `json:"value"`
		}
		if err := decodeSetting(r, &body); err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, nil, s.SetSecret(r.Context(), r.PathValue("name"), r.PathValue("secret"), body.Value))
	})
	mux.HandleFunc("DELETE /v1/plugins/{name}/secrets/{secret}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, nil, s.RemoveSecret(r.Context(), r.PathValue("name"), r.PathValue("secret")))
	})
}

func settingsPath(plugin string, rest ...string) string {
	p := "/v1/plugins/" + segment(plugin)
	for _, r := range rest {
		p += "/" + segment(r)
	}
	return p
}

func (c *Client) Config(ctx context.Context, plugin string) (map[string]string, error) {
	if plugin == "" {
		return nil, host.NotInstalledError(plugin)
	}
	var v map[string]string
	err := c.do(ctx, http.MethodGet, settingsPath(plugin, "config"), nil, &v)
	return v, err
}

func (c *Client) SetConfig(ctx context.Context, plugin string, set map[string]string, unset []string) (map[string]string, error) {
	if plugin == "" {
		return nil, host.NotInstalledError(plugin)
	}
	body, _ := json.Marshal(configChange{Set: set, Unset: unset})
	var v map[string]string
	err := c.do(ctx, http.MethodPut, settingsPath(plugin, "config"), body, &v)
	return v, err
}

func (c *Client) Secrets(ctx context.Context, plugin string) ([]host.SecretStatus, error) {
	if plugin == "" {
		return nil, host.NotInstalledError(plugin)
	}
	var v []host.SecretStatus
	err := c.do(ctx, http.MethodGet, settingsPath(plugin, "secrets"), nil, &v)
	return v, err
}

func (c *Client) SetSecret(ctx context.Context, plugin, name, value string) error {
	if plugin == "" {
		return host.NotInstalledError(plugin)
	}
	if name == "" {
		// The host would refuse it as undeclared, once the plugin is found.
		ss, err := c.Secrets(ctx, plugin)
		if err != nil {
			return err
		}
		declared := make([]string, 0, len(ss))
		for _, s := range ss {
			declared = append(declared, s.Name)
		}
		return host.UndeclaredSecretError(plugin, name, declared)
	}
	body, _ := json.Marshal(struct {
		Value string `json:"value"`
	}{value})
	return c.do(ctx, http.MethodPut, settingsPath(plugin, "secrets", name), body, nil)
}

func (c *Client) RemoveSecret(ctx context.Context, plugin, name string) error {
	if plugin == "" {
		return host.NotInstalledError(plugin)
	}
	if name == "" {
		// The host would find it not set, once the plugin is found.
		if _, err := c.Secrets(ctx, plugin); err != nil {
			return err
		}
		return store.SecretNotSetError(plugin, name)
	}
	return c.do(ctx, http.MethodDelete, settingsPath(plugin, "secrets", name), nil, nil)
}
