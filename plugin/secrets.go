package plugin

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Ceilings of the config and secrets sections.
const (
	MaxSecrets        = 16
	MaxSecretHosts    = 16
	MaxConfigBytes    = 16 << 10
	MaxSecretPrefix   = 64
	MaxSecretValueLen = 8 << 10
)

// SecretBinding is one secret a plugin uses: the operator sets its value
// (`toolhost secret set`), the plugin never sees it. toolhost.http_fetch
// sends it as Header (Prefix + value) on the requests that ask for it by
// name, and only to Hosts; a request elsewhere that asks for it is denied.
type SecretBinding struct {
	// Hosts are the hosts the secret may be sent to; each must be within
	// permissions.allowed_hosts.
	Hosts []string `json:"hosts"`
	// Header is the request header that carries the secret.
	Header string `json:"header"`
	// Prefix goes before the value, e.g. "Bearer ".
	Prefix string `json:"prefix,omitempty"`
}

var (
	secretNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	headerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,63}$`)
)

// ValidSecretName checks a secret (or config key) name.
func ValidSecretName(name string) error {
	if !secretNameRE.MatchString(name) {
		return fmt.Errorf("%q is not a valid name: use a lowercase letter, then up to 63 of a-z 0-9 _", truncate(name))
	}
	return nil
}

// forbiddenSecretHeaders are headers the transport owns or that would
// change where the request goes.
var forbiddenSecretHeaders = []string{"host", "connection", "content-length", "transfer-encoding", "te", "upgrade", "proxy-authorization", "cookie2"}

// BindsHost reports whether host (a URL's Hostname) may receive the secret.
func (b *SecretBinding) BindsHost(host string) bool {
	return MatchHost(b.Hosts, host)
}

// MatchHost reports whether host matches one of patterns: exactly, or as a
// subdomain of a "*.domain" pattern. Comparison ignores case and a
// trailing dot.
func MatchHost(patterns []string, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return false
	}
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSuffix(p, "."))
		if suffix, ok := strings.CutPrefix(p, "*."); ok {
			if suffix != "" && strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == p {
			return true
		}
	}
	return false
}

// coveredBy reports whether every host h names is within allowed.
func coveredBy(allowed []string, h string) bool {
	if slices.Contains(allowed, h) {
		return true
	}
	if rest, wild := strings.CutPrefix(h, "*."); wild {
		// *.a.example.com is within *.example.com.
		return coveredWild(allowed, rest)
	}
	return MatchHost(allowed, h)
}

// coveredWild reports whether "*."+rest is within allowed: some allowed
// wildcard covers rest itself (so every subdomain of rest too).
func coveredWild(allowed []string, rest string) bool {
	for _, a := range allowed {
		if s, ok := strings.CutPrefix(a, "*."); ok && strings.HasSuffix(rest, "."+s) {
			return true
		}
	}
	return false
}

func (m *Manifest) validateConfigAndSecrets() error {
	if m.Config != nil {
		if len(m.Config) > MaxConfigBytes {
			return invalid("config: the schema is %d bytes, the limit is %d", len(m.Config), MaxConfigBytes)
		}
		if _, err := CompileSchema(m.Config); err != nil {
			return invalid("config: %v", err)
		}
	}
	if len(m.Secrets) > MaxSecrets {
		return invalid("secrets: %d secrets, the limit is %d", len(m.Secrets), MaxSecrets)
	}
	for _, name := range m.SecretNames() {
		b := m.Secrets[name]
		if err := ValidSecretName(name); err != nil {
			return invalid("secrets: %v", err)
		}
		if len(b.Hosts) == 0 {
			return invalid("secrets.%s.hosts: name the hosts the secret may be sent to (within permissions.allowed_hosts)", name)
		}
		if len(b.Hosts) > MaxSecretHosts {
			return invalid("secrets.%s.hosts: %d entries, the limit is %d", name, len(b.Hosts), MaxSecretHosts)
		}
		for _, h := range b.Hosts {
			if !hostRE.MatchString(h) || looksNumeric(h) {
				return invalid("secrets.%s.hosts: %q is not a lowercase host name (optionally \"*.\" + domain)", name, truncate(h))
			}
			if !coveredBy(m.Permissions.AllowedHosts, h) {
				return invalid("secrets.%s.hosts: %q is not within permissions.allowed_hosts %v: a secret can only go where the plugin may connect", name, h, m.Permissions.AllowedHosts)
			}
		}
		if !headerNameRE.MatchString(b.Header) || slices.Contains(forbiddenSecretHeaders, strings.ToLower(b.Header)) {
			return invalid("secrets.%s.header %q: name an ordinary request header such as Authorization or X-Api-Key", name, truncate(b.Header))
		}
		if len(b.Prefix) > MaxSecretPrefix {
			return invalid("secrets.%s.prefix is %d bytes, the limit is %d", name, len(b.Prefix), MaxSecretPrefix)
		}
		if err := checkText(fmt.Sprintf("secrets.%s.prefix", name), b.Prefix); err != nil {
			return err
		}
		if !validHeaderValue(b.Prefix) {
			return invalid("secrets.%s.prefix %q holds characters a header value cannot", name, truncate(b.Prefix))
		}
	}
	return nil
}

// ValidSecretValue checks a secret's value: what can travel in a header.
func ValidSecretValue(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("the value is empty")
	case len(v) > MaxSecretValueLen:
		return fmt.Errorf("the value is %d bytes, the limit is %d", len(v), MaxSecretValueLen)
	case !validHeaderValue(v):
		return fmt.Errorf("the value holds control characters or line breaks, which cannot travel in a header (a trailing newline is removed when read from stdin)")
	}
	return nil
}

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// SecretNames lists the declared secrets, sorted.
func (m *Manifest) SecretNames() []string {
	out := make([]string, 0, len(m.Secrets))
	for n := range m.Secrets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ValidateConfig checks a full set of configuration values (strings, as
// the plugin reads them with the PDK's config functions) against the
// manifest's config schema. A plugin without one takes no configuration.
func (m *Manifest) ValidateConfig(values map[string]string) error {
	if m.Config == nil {
		if len(values) > 0 {
			return fmt.Errorf("plugin %s declares no config keys", m.Name)
		}
		return nil
	}
	s, err := CompileSchema(m.Config)
	if err != nil {
		return err
	}
	obj := make(map[string]any, len(values))
	for k, v := range values {
		obj[k] = v
	}
	return s.Validate(obj)
}

// diffSecrets adds the changes to the secrets section: a new secret, or a
// binding to more hosts or another header, widens.
func diffSecrets(old, new *Manifest, add addFunc) {
	for _, name := range new.SecretNames() {
		b := new.Secrets[name]
		ob, had := old.Secrets[name]
		if !had {
			add("permission", true, "secrets: may now send secret %s as %s to %s", name, b.Header, strings.Join(b.Hosts, ", "))
			continue
		}
		for _, h := range b.Hosts {
			if !MatchHost(ob.Hosts, strings.TrimPrefix(h, "*.")) || strings.HasPrefix(h, "*.") && !slices.Contains(ob.Hosts, h) {
				add("permission", true, "secrets: may now send secret %s to %s", name, h)
			}
		}
		if !strings.EqualFold(b.Header, ob.Header) || b.Prefix != ob.Prefix {
			add("permission", true, "secrets: secret %s now sent as %s %q (was %s %q)", name, b.Header, b.Prefix, ob.Header, ob.Prefix)
		}
	}
	for _, name := range old.SecretNames() {
		if _, has := new.Secrets[name]; !has {
			add("permission", false, "secrets: no longer uses secret %s", name)
		}
	}
	if !jsonEqual(old.Config, new.Config) {
		add("config", false, "config schema: %s -> %s", orNoneJSON(old.Config), orNoneJSON(new.Config))
	}
}
