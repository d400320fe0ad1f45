package plugin

import (
	"errors"
	"strings"
	"testing"
)

func secretsManifest(hosts, extra string) string {
	return `{"name":"a","version":"1.0.0","wasm":"a.wasm",
 "tools":[{"name":"t","description":"d","parameters":{"type":"object"}}],
 "permissions":{"allowed_hosts":` + hosts + `}` + extra + `}`
}

func TestSecretsManifest(t *testing.T) {
	hosts := `["api.example.com","*.example.org"]`
	for _, tc := range []struct {
		name, extra, want string // want "" = accepted
	}{
		{"bound to an allowed host", `,"secrets":{"api_token":{"hosts":["api.example.com"],"header":"Authorization","prefix":"Bearer "}}`, ""},
		{"bound under a wildcard", `,"secrets":{"k":{"hosts":["a.example.org","*.b.example.org"],"header":"X-Api-Key"}}`, ""},
		{"host outside allowed_hosts", `,"secrets":{"k":{"hosts":["evil.com"],"header":"X"}}`, `"evil.com" is not within permissions.allowed_hosts`},
		{"wildcard wider than the grant", `,"secrets":{"k":{"hosts":["*.example.com"],"header":"X"}}`, `"*.example.com" is not within`},
		{"the wildcard's own domain", `,"secrets":{"k":{"hosts":["example.org"],"header":"X"}}`, `"example.org" is not within`},
		{"no hosts", `,"secrets":{"k":{"hosts":[],"header":"X"}}`, "name the hosts"},
		{"IP host", `,"secrets":{"k":{"hosts":["127.0.0.1"],"header":"X"}}`, "not a lowercase host name"},
		{"bad name", `,"secrets":{"Api-Token":{"hosts":["api.example.com"],"header":"X"}}`, "not a valid name"},
		{"Host header", `,"secrets":{"k":{"hosts":["api.example.com"],"header":"Host"}}`, "ordinary request header"},
		{"header with a colon", `,"secrets":{"k":{"hosts":["api.example.com"],"header":"X:Y"}}`, "ordinary request header"},
		{"prefix with a line break", `,"secrets":{"k":{"hosts":["api.example.com"],"header":"X","prefix":"a\r\nInjected: 1"}}`, "U+000D"},
		{"prefix with hidden text", `,"secrets":{"k":{"hosts":["api.example.com"],"header":"X","prefix":"a\u202eb"}}`, "RIGHT-TO-LEFT OVERRIDE"},
		{"unknown binding key", `,"secrets":{"k":{"hosts":["api.example.com"],"header":"X","value":"v"}}`, `unknown key "value"`},
		{"binding not an object", `,"secrets":{"k":"v"}`, "must be an object"},
		{"config schema", `,"config":{"type":"object","properties":{"units":{"enum":["metric"]}}}`, ""},
		{"config not an object schema", `,"config":{"type":"string"}`, "config:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(secretsManifest(hosts, tc.extra)))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidManifest)):
				t.Fatalf("got %v, want an invalid manifest error with %q", err, tc.want)
			}
		})
	}
}

func TestValidateConfig(t *testing.T) {
	m, err := ParseManifest([]byte(secretsManifest(`[]`, `,"config":{"type":"object","properties":{"units":{"enum":["metric","imperial"]},"lang":{"type":"string"}},"required":["units"],"additionalProperties":false}`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		values map[string]string
		ok     bool
	}{
		{map[string]string{"units": "metric"}, true},
		{map[string]string{"units": "metric", "lang": "en"}, true},
		{map[string]string{"lang": "en"}, false},                // required units missing
		{map[string]string{"units": "kelvin"}, false},           // outside the enum
		{map[string]string{"units": "metric", "x": "1"}, false}, // undeclared key
	} {
		if err := m.ValidateConfig(tc.values); (err == nil) != tc.ok {
			t.Errorf("ValidateConfig(%v) = %v, want ok=%v", tc.values, err, tc.ok)
		}
	}
	plain, _ := ParseManifest([]byte(secretsManifest(`[]`, ``)))
	if err := plain.ValidateConfig(map[string]string{"a": "b"}); err == nil {
		t.Error("a plugin without a config schema took a value")
	}
}

func TestDiffSecrets(t *testing.T) {
	hosts := `["api.example.com","up.example.com","*.example.org"]`
	parse := func(extra string) *Manifest {
		t.Helper()
		m, err := ParseManifest([]byte(secretsManifest(hosts, extra)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := parse(`,"secrets":{"k":{"hosts":["api.example.com"],"header":"Authorization"}}`)
	for _, tc := range []struct {
		name, extra string
		widens      bool
		text        string
	}{
		{"same", `,"secrets":{"k":{"hosts":["api.example.com"],"header":"Authorization"}}`, false, ""},
		{"new secret", `,"secrets":{"k":{"hosts":["api.example.com"],"header":"Authorization"},"j":{"hosts":["up.example.com"],"header":"X"}}`, true, "may now send secret j"},
		{"more hosts", `,"secrets":{"k":{"hosts":["api.example.com","up.example.com"],"header":"Authorization"}}`, true, "may now send secret k to up.example.com"},
		{"a wildcard", `,"secrets":{"k":{"hosts":["api.example.com","*.a.example.org"],"header":"Authorization"}}`, true, "to *.a.example.org"},
		{"another header", `,"secrets":{"k":{"hosts":["api.example.com"],"header":"X-Leak"}}`, true, "now sent as X-Leak"},
		{"dropped", ``, false, "no longer uses secret k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes := Diff(base, parse(tc.extra))
			if Widens(changes) != tc.widens {
				t.Fatalf("Widens = %v, want %v: %+v", !tc.widens, tc.widens, changes)
			}
			if tc.text == "" {
				if len(changes) != 0 {
					t.Fatalf("changes %+v, want none", changes)
				}
				return
			}
			found := false
			for _, c := range changes {
				found = found || strings.Contains(c.Text, tc.text)
			}
			if !found {
				t.Fatalf("changes %+v lack %q", changes, tc.text)
			}
		})
	}
}
