package sandbox

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/plugin"
)

// maxSecretsPerRequest bounds the names one fetch request may ask for.
const maxSecretsPerRequest = plugin.MaxSecrets

// requestedSecrets resolves the secret names a fetch request asks for. A
// name the plugin did not declare, or one not bound to host, is a
// permission denial; a declared secret the operator has not set is a plain
// error that says how to set it. Messages never hold a value.
func (e egress) requestedSecrets(names []string, u *url.URL) ([]engine.Secret, error) {
	host := u.Hostname()
	if len(names) > maxSecretsPerRequest {
		return nil, fmt.Errorf("a request may ask for at most %d secrets", maxSecretsPerRequest)
	}
	if len(names) > 0 && !e.plaintextOK(u) {
		return nil, fmt.Errorf("%w: secrets are sent only over https (over http %q would cross the network readable): use an https:// URL", errDenied, truncateMsg(names[0], 64))
	}
	var out []engine.Secret
	for _, name := range names {
		s, ok := e.secret(name)
		if !ok {
			return nil, fmt.Errorf("%w: secret %q is not declared in the plugin's manifest", errDenied, truncateMsg(name, 64))
		}
		if !plugin.MatchHost(s.Hosts, host) {
			return nil, fmt.Errorf("%w: secret %q may only be sent to %v, not to %q", errDenied, name, s.Hosts, host)
		}
		if s.Value == "" {
			return nil, fmt.Errorf("secret %q of plugin %s has no value: the operator sets it with `toolhost secret set %s %s`", name, e.plugin, e.plugin, name)
		}
		out = append(out, s)
	}
	return out, nil
}

func (e egress) secret(name string) (engine.Secret, bool) {
	for _, s := range e.secrets {
		if s.Name == name {
			return s, true
		}
	}
	return engine.Secret{}, false
}

// applySecrets sets each secret's header on a request to host when host is
// bound to it, and removes it otherwise (a redirect hop copies the headers
// of the hop before).
func (e egress) applySecrets(h http.Header, secrets []engine.Secret, u *url.URL) {
	host := u.Hostname()
	for _, s := range secrets {
		if plugin.MatchHost(s.Hosts, host) && e.plaintextOK(u) {
			h.Set(s.Header, s.Prefix+s.Value)
		} else {
			h.Del(s.Header)
		}
	}
}

// plaintextOK reports whether a secret may go on a request to u: over
// https always; over http only when the operator let plugins reach private
// networks (serve --allow-private-network), the setting for a local test
// server. Elsewhere http would put the operator's token on the wire in
// clear text, readable by anyone on the path.
func (e egress) plaintextOK(u *url.URL) bool {
	return u.Scheme == "https" || e.allowPrivate
}
