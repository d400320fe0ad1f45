package main

import "testing"

// TestKeyIDArgAcceptsEitherCase: a key ID typed for trust revoke, unrevoke
// or remove is read in upper, lower or mixed case (revoking a compromised
// key must not fail on how it was copied); anything else is still refused.
func TestKeyIDArgAcceptsEitherCase(t *testing.T) {
	const want = "90e91f5cb165a242"
	for _, arg := range []string{want, "90E91F5CB165A242", "90e91F5cb165A242"} {
		for name, parse := range map[string]func(string) (string, error){
			"keyIDArg":     func(s string) (string, error) { id, err := keyIDArg(s); return id.String(), err },
			"keyIDArgText": func(s string) (string, error) { id, err := keyIDArgText(s); return id.String(), err },
		} {
			if got, err := parse(arg); err != nil || got != want {
				t.Errorf("%s(%q) = %q, %v; want %s", name, arg, got, err, want)
			}
		}
	}
	for _, arg := range []string{"90e91f5cb165a24", "90e91f5cb165a2422", "90e91f5cb165a24g", "", "Ｆ0e91f5cb165a242"} {
		if _, err := keyIDArgText(arg); err == nil {
			t.Errorf("keyIDArgText(%q) accepted", arg)
		}
	}
}
