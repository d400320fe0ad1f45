package sandbox

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"

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

// redactor hides the values of the secrets a request carried wherever the
// answer brings them back: a server that echoes request headers (an
// "invalid key sk-…" error, a debugging endpoint, a redirect to a URL
// holding it) would otherwise hand the plugin the value it is never meant
// to hold. Each value is replaced by "[secret NAME]" as is, URL-encoded
// JSON-escaped and HTML-escaped (the forms an honest echo takes); a server bound to the
// secret that encodes it otherwise is trusted with it anyway.
type redactor struct {
	r       *strings.Replacer // nil when the request carried no secret
	longest int               // bytes of the longest form replaced
}

func newRedactor(secrets []engine.Secret) redactor {
	type form struct{ old, marker string }
	var forms []form
	for _, s := range secrets {
		for _, f := range []string{s.Value, url.QueryEscape(s.Value), url.PathEscape(s.Value), jsonString(s.Value, true), jsonString(s.Value, false), html.EscapeString(s.Value)} {
			forms = append(forms, form{f, "[secret " + s.Name + "]"})
		}
	}
	if len(forms) == 0 {
		return redactor{}
	}
	// Longest first: a value that is a prefix of another's must not leave
	// the rest of the longer one behind.
	slices.SortStableFunc(forms, func(a, b form) int { return cmp.Compare(len(b.old), len(a.old)) })
	var rd redactor
	var pairs []string
	for _, f := range forms {
		pairs = append(pairs, f.old, f.marker)
		rd.longest = max(rd.longest, len(f.old))
	}
	rd.r = strings.NewReplacer(pairs...)
	return rd
}

// jsonString is v as it stands inside a JSON string, with or without
// Go's escaping of <, > and &.
func jsonString(v string, escapeHTML bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	enc.Encode(v)
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

func (rd redactor) string(s string) string {
	if rd.r == nil {
		return s
	}
	return rd.r.Replace(s)
}

func (rd redactor) bytes(b []byte) []byte {
	if rd.r == nil {
		return b
	}
	return []byte(rd.r.Replace(string(b)))
}

// error is err with the secrets hidden in its text, still a denial if err
// was one.
func (rd redactor) error(err error) error {
	if rd.r == nil || err == nil {
		return err
	}
	msg := rd.r.Replace(err.Error())
	switch {
	case msg == err.Error():
		return err
	case errors.Is(err, errDenied):
		return fmt.Errorf("%w: %s", errDenied, strings.TrimPrefix(msg, errDenied.Error()+": "))
	}
	return errors.New(msg)
}
