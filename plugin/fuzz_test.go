package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolhost/toolhost/signing"
)

// FuzzParseManifest: ParseManifest never panics, and whatever it accepts
// keeps the promises of the format and survives a re-encode by Go.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(baseManifest))
	f.Add([]byte(governed(f)))
	// The repository's real manifests: the samples and the fixture.
	real, _ := filepath.Glob("../sample-plugins/*/plugin.json")
	for _, name := range append(real, "testdata/tiny/plugin.json") {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		`{"name":"a","version":"0.0.0","wasm":"a.wasm","tools":[{"name":"t","description":"d","parameters":{"type":"object"}}]}`,
		`{"name":"a","version":"1.0.0-rc.1+b","wasm":"a.wasm","tools":[{"name":"t","description":"d","parameters":{"type":"object","properties":{"x":{"$ref":"#/$defs/y"}},"$defs":{"y":{"type":"string"}}}}],"permissions":{"allowed_hosts":["*.example.com"],"allowed_paths":{"/a":"/b"}}}`,
		`{"name":"a","name":"b"}`,
		`{"name":"a","version":"1.0.0","wasm":"a.wasm","tools":[{"name":"t","description":"d","parameters":{"type":"object"}}],"permissions":{"allowed_hosts":["api.example.com","*.example.org"]},"config":{"type":"object","properties":{"u":{"type":"string"}}},"secrets":{"api_token":{"hosts":["api.example.com","*.a.example.org"],"header":"Authorization","prefix":"Bearer "}}}`,
		`{"name":"a","version":"1.0.0","wasm":"a.wasm","tools":[{"name":"t","description":"d","parameters":{"type":"object"}}],"secrets":{"k":{"hosts":["x.com"],"header":"X","Header":"Y"}}}`,
		`{"permissions":{"allowed_hosts":[],"Allowed_Hosts":["*"]}}`,
		`{"name":"a","version":"1.0.0","wasm":"a.wasm","tools":[{"name":"t","description":"\u202e","parameters":{"type":"object"}}]}`,
		`{"name":"a","version":"1.0.0","wasm":"a.wasm","tools":[{"name":"t","description":"d","parameters":{"type":"object","$ref":"http://x/"}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("error does not wrap ErrInvalidManifest: %v", err)
			}
			return
		}
		checkManifestPromises(t, m)

		// Go's own encoding of what was accepted is accepted too, and
		// means the same.
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseManifest(again)
		if err != nil {
			t.Fatalf("accepted %q but not its re-encoding %q: %v", data, again, err)
		}
		if diff := cmp.Diff(m, m2, cmp.Comparer(sameJSON), notRaw(cmpopts.EquateEmpty())); diff != "" {
			t.Fatalf("re-encoding changed the manifest:\n%s", diff)
		}

		// Any accepted manifest packs into a bundle that decodes again.
		b, err := NewBundle(data, []byte(tinyWasm))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeBytes(b.Bytes()); err != nil {
			t.Fatalf("a bundle of an accepted manifest does not decode: %v", err)
		}
	})
}

// notRaw keeps opt away from json.RawMessage values, which sameJSON
// compares (two options for one value make cmp panic).
func notRaw(opt cmp.Option) cmp.Option {
	return cmp.FilterValues(func(x, y any) bool {
		_, raw := x.(json.RawMessage)
		return !raw
	}, opt)
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}

// checkManifestPromises restates the manifest contract of shared/DESIGN.md
// directly, independent of how validate is written.
func checkManifestPromises(t *testing.T, m *Manifest) {
	t.Helper()
	if !pluginNameRE.MatchString(m.Name) {
		t.Fatalf("accepted plugin name %q", m.Name)
	}
	if _, err := ParseVersion(m.Version); err != nil {
		t.Fatalf("accepted version %q", m.Version)
	}
	if strings.ContainsAny(m.Wasm, "/\\\x00") || !strings.HasSuffix(m.Wasm, ".wasm") {
		t.Fatalf("accepted wasm %q", m.Wasm)
	}
	if len(m.Tools) == 0 || len(m.Tools) > MaxTools {
		t.Fatalf("accepted %d tools", len(m.Tools))
	}
	names := map[string]bool{}
	texts := []string{m.Description}
	for _, tool := range m.Tools {
		if !toolNameRE.MatchString(tool.Name) || names[strings.ToLower(tool.Name)] || tool.Description == "" || tool.Export == "" {
			t.Fatalf("accepted tool %+v", tool)
		}
		names[strings.ToLower(tool.Name)] = true
		texts = append(texts, tool.Description)
		var schema map[string]any
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Fatalf("accepted parameters %s", tool.Parameters)
		}
	}
	for _, s := range texts {
		for _, r := range s {
			if hiddenRune(r) {
				t.Fatalf("accepted a description with %U", r)
			}
		}
	}
	if l := m.Limits; l.MemoryPages > MaxMemoryPages || l.TimeoutMS > MaxTimeoutMS || l.MaxOutputBytes > MaxOutputBytes {
		t.Fatalf("accepted limits %+v", l)
	}
	for _, h := range m.Permissions.AllowedHosts {
		if h == "" || strings.ContainsAny(h, ":/[]@ ") || h == "*" || strings.ToLower(h) != h {
			t.Fatalf("accepted host %q", h)
		}
	}
	for hp, gp := range m.Permissions.AllowedPaths {
		if hp == "/" || !strings.HasPrefix(hp, "/") || !strings.HasPrefix(gp, "/") || strings.Contains(hp+gp, "..") {
			t.Fatalf("accepted path grant %q -> %q", hp, gp)
		}
	}
}

// FuzzDecodeBundle: Decode never panics, and a bundle it accepts is exactly
// the canonical encoding of what it holds.
func FuzzDecodeBundle(f *testing.F) {
	loadFixtures(f)
	f.Add(fixtures.unsigned)
	f.Add(fixtures.signed)
	if real, err := os.ReadFile("testdata/tiny.plugin"); err == nil {
		f.Add(real)
	}
	samples, _ := filepath.Glob("../sample-plugins/*/plugin.json")
	for _, name := range samples {
		if m, err := os.ReadFile(name); err == nil {
			if b, err := NewBundle(m, []byte(tinyWasm)); err == nil {
				f.Add(b.Bytes())
			}
		}
	}
	f.Add(fixtures.signed[:1024])
	f.Add(append(bytes.Clone(fixtures.signed), 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBytes(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidBundle) && !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("error wraps neither ErrInvalidBundle nor ErrInvalidManifest: %v", err)
			}
			return
		}
		if !bytes.Equal(b.Bytes(), data) {
			t.Fatal("accepted bytes that are not the canonical encoding")
		}
		if b.Manifest() == nil || len(b.Signatures) > MaxSignatures {
			t.Fatal("accepted bundle without a manifest or with too many signatures")
		}
		checkManifestPromises(t, b.Manifest())
		for _, s := range b.Signatures {
			checkSignatureForm(t, s)
		}
		b2, err := Decode(bytes.NewReader(data))
		if err != nil || b2.Digest() != b.Digest() {
			t.Fatalf("Decode disagrees with DecodeBytes: %v", err)
		}
	})
}

// FuzzParseSignatures: DecodeSignaturesJSON never panics, and what it
// accepts encodes to a form that decodes to the same signatures.
func FuzzParseSignatures(f *testing.F) {
	loadFixtures(f)
	d := mustDecode(f, fixtures.unsigned).Digest()
	f.Add(EncodeSignaturesJSON(nil))
	f.Add(EncodeSignaturesJSON([]signing.Signature{
		signing.Sign(fixtures.k1, d, time.Time{}),
		signing.Sign(fixtures.k2, d, time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)),
	}))
	f.Add([]byte(`{"signatures":[{"key_id":"0123456789abcdef","expires":"2030-01-01T00:00:00Z","signature":""}]}`))
	f.Add([]byte(`{"signatures":null}`))
	f.Add([]byte(`{"signatures":[],"Signatures":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sigs, err := DecodeSignaturesJSON(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidBundle) {
				t.Fatalf("error does not wrap ErrInvalidBundle: %v", err)
			}
			return
		}
		if len(sigs) > MaxSignatures {
			t.Fatalf("accepted %d signatures", len(sigs))
		}
		for _, s := range sigs {
			checkSignatureForm(t, s)
		}
		enc := EncodeSignaturesJSON(sigs)
		again, err := DecodeSignaturesJSON(enc)
		if err != nil {
			t.Fatalf("the encoding of accepted signatures does not decode: %v\n%s", err, enc)
		}
		if diff := cmp.Diff(sigs, again, cmpEmptyNil); diff != "" {
			t.Fatalf("round trip changed the signatures:\n%s", diff)
		}
		if !bytes.Equal(EncodeSignaturesJSON(again), enc) {
			t.Fatal("encoding is not stable")
		}
	})
}

// checkSignatureForm: an expiry is whole seconds in UTC, so the signed
// message (which carries Unix seconds) covers all of it.
func checkSignatureForm(t *testing.T, s signing.Signature) {
	t.Helper()
	if s.Expires.IsZero() {
		return
	}
	if s.Expires.Nanosecond() != 0 || s.Expires.Location() != time.UTC {
		t.Fatalf("accepted expiry %v: not whole seconds in UTC", s.Expires)
	}
}
