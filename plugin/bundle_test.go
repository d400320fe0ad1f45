package plugin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/signing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// tinyWasm is the smallest valid module: the magic number and version.
const tinyWasm = "\x00asm\x01\x00\x00\x00"

// fixedNow is the clock of every policy decision in these tests.
var fixedNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

var fixtures struct {
	once     sync.Once
	k1, k2   signing.PrivateKey
	unsigned []byte // canonical encoding of testdata/tiny, no signatures
	signed   []byte // the same, signed by k1 (no expiry) and k2 (expires 2099)
}

// loadFixtures builds the keys and bundles once per test run.
func loadFixtures(t testing.TB) {
	t.Helper()
	fixtures.once.Do(func() {
		fixtures.k1, _ = signing.NewPrivateKeyFromSeed(bytes.Repeat([]byte{1}, 32))
		fixtures.k2, _ = signing.NewPrivateKeyFromSeed(bytes.Repeat([]byte{2}, 32))
		b, err := PackDir("testdata/tiny")
		if err != nil {
			panic(err)
		}
		fixtures.unsigned = b.Bytes()
		for _, s := range []signing.Signature{
			signing.Sign(fixtures.k1, b.Digest(), time.Time{}),
			signing.Sign(fixtures.k2, b.Digest(), time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)),
		} {
			if _, err := b.AddSignature(s); err != nil {
				panic(err)
			}
		}
		fixtures.signed = b.Bytes()
	})
}

// trustBoth trusts k1 and k2 and requires both.
func trustBoth() curator.TrustSet {
	ts := curator.TrustSet{Keys: map[signing.KeyID]curator.TrustedKey{}, Threshold: 2}
	for i, k := range []signing.PrivateKey{fixtures.k1, fixtures.k2} {
		ts.Keys[k.Public().ID()] = curator.TrustedKey{Name: fmt.Sprintf("curator%d", i+1), Key: k.Public()}
	}
	return ts
}

func mustDecode(t testing.TB, data []byte) *Bundle {
	t.Helper()
	b, err := DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPackDeterministic(t *testing.T) {
	loadFixtures(t)
	a, err := PackDir("testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	// The same files elsewhere, with other modes and times, pack the same.
	dir := t.TempDir()
	for _, name := range []string{"plugin.json", "plugin.wasm"} {
		data, err := os.ReadFile(filepath.Join("testdata/tiny", name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, time.Now(), time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := PackDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var viaEncode bytes.Buffer
	if err := a.Encode(&viaEncode); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) || !bytes.Equal(a.Bytes(), viaEncode.Bytes()) || !bytes.Equal(a.Bytes(), fixtures.unsigned) {
		t.Fatal("packing the same plugin twice gave different bytes")
	}

	// The format is a contract: pin it.
	golden := filepath.Join("testdata", "tiny.plugin")
	if *update {
		if err := os.WriteFile(golden, a.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(a.Bytes(), want) {
		t.Errorf("the encoding of testdata/tiny changed; if that is deliberate, every existing bundle breaks (go test -update rewrites %s)", golden)
	}
	if len(want)%512 != 0 {
		t.Errorf("bundle is %d bytes, not whole tar blocks", len(want))
	}
}

func TestPackDirRefusals(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	manifest, err := os.ReadFile("testdata/tiny/plugin.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("no manifest", func(t *testing.T) {
		if _, err := PackDir(write(t, map[string]string{"plugin.wasm": tinyWasm})); err == nil {
			t.Fatal("packed a directory without plugin.json")
		}
	})
	t.Run("no wasm", func(t *testing.T) {
		if _, err := PackDir(write(t, map[string]string{"plugin.json": string(manifest)})); err == nil {
			t.Fatal("packed a plugin without its wasm")
		}
	})
	t.Run("bad manifest names the file", func(t *testing.T) {
		_, err := PackDir(write(t, map[string]string{"plugin.json": `{"name":"X"}`, "plugin.wasm": tinyWasm}))
		if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), "plugin.json") {
			t.Fatalf("PackDir = %v", err)
		}
	})
	t.Run("wasm is a directory", func(t *testing.T) {
		dir := write(t, map[string]string{"plugin.json": string(manifest)})
		if err := os.Mkdir(filepath.Join(dir, "plugin.wasm"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := PackDir(dir); err == nil || !strings.Contains(err.Error(), "plugin.wasm is a directory, not a file: put the plugin.wasm file itself in") {
			t.Fatalf("PackDir = %v", err)
		}
	})
	t.Run("wasm is a named pipe", func(t *testing.T) {
		dir := write(t, map[string]string{"plugin.json": string(manifest)})
		if err := syscall.Mkfifo(filepath.Join(dir, "plugin.wasm"), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := PackDir(dir); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "plugin.wasm is a named pipe, not a file") {
				t.Fatalf("PackDir = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("PackDir waits on a named pipe")
		}
	})
	// A link that leads out of the plugin directory is refused, whichever
	// file it is and however it leads out; one that stays inside is read.
	outside := write(t, map[string]string{"plugin.json": string(manifest), "plugin.wasm": tinyWasm})
	for _, tt := range []struct{ name, file, target string }{
		{"wasm links to an absolute path outside", "plugin.wasm", filepath.Join(outside, "plugin.wasm")},
		{"wasm links to a relative path outside", "plugin.wasm", filepath.Join("..", filepath.Base(outside), "plugin.wasm")},
		{"manifest links outside", "plugin.json", filepath.Join(outside, "plugin.json")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"plugin.json": string(manifest), "plugin.wasm": tinyWasm}
			delete(files, tt.file)
			dir := write(t, files)
			if err := os.Symlink(tt.target, filepath.Join(dir, tt.file)); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("%s is a symbolic link to %s, outside %s: pack reads only files inside the plugin directory", filepath.Join(dir, tt.file), tt.target, dir)
			if _, err := PackDir(dir); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("PackDir = %v\nwant %s", err, want)
			}
		})
	}
	t.Run("wasm links inside", func(t *testing.T) {
		dir := write(t, map[string]string{"plugin.json": string(manifest), "build.wasm": tinyWasm})
		if err := os.Symlink("build.wasm", filepath.Join(dir, "plugin.wasm")); err != nil {
			t.Fatal(err)
		}
		if b, err := PackDir(dir); err != nil || string(b.Wasm) != tinyWasm {
			t.Fatalf("PackDir = %v", err)
		}
	})
	for _, tt := range []struct{ name, wasm, want string }{
		{"wasm is text", "#!/bin/sh\necho hi\n", "the module is not WebAssembly: it starts with 23 21 2f 62, not the magic number 00 61 73 6d"},
		{"wasm is empty", "", "the module is 0 bytes, too short to be WebAssembly"},
		{"wasm is a component", "\x00asm\x0d\x00\x01\x00", "the module is a WebAssembly component, not a core module"},
		{"wasm is version 2", "\x00asm\x02\x00\x00\x00", "the module is WebAssembly binary version 02 00 00 00; only version 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PackDir(write(t, map[string]string{"plugin.json": string(manifest), "plugin.wasm": tt.wasm}))
			if !errors.Is(err, ErrInvalidBundle) || !strings.Contains(err.Error(), "plugin.wasm: invalid plugin bundle: "+tt.want) ||
				!strings.Contains(err.Error(), "and pack it again") {
				t.Fatalf("PackDir = %v\nwant %s", err, tt.want)
			}
		})
	}
	t.Run("manifest too large", func(t *testing.T) {
		big := strings.Replace(string(manifest), `"A plugin`, `"`+strings.Repeat(" ", MaxManifestBytes)+`A plugin`, 1)
		_, err := PackDir(write(t, map[string]string{"plugin.json": big, "plugin.wasm": tinyWasm}))
		if err == nil || !strings.Contains(err.Error(), "larger than the limit") {
			t.Fatalf("PackDir = %v", err)
		}
	})
}

func TestBundleRoundTrip(t *testing.T) {
	loadFixtures(t)
	for name, data := range map[string][]byte{"unsigned": fixtures.unsigned, "signed": fixtures.signed} {
		t.Run(name, func(t *testing.T) {
			b := mustDecode(t, data)
			if !bytes.Equal(b.Bytes(), data) {
				t.Fatal("decode then encode changed the bytes")
			}
			viaReader, err := Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(b, viaReader, cmp.AllowUnexported(Bundle{})); diff != "" {
				t.Errorf("Decode and DecodeBytes differ:\n%s", diff)
			}
			manifest, _ := os.ReadFile("testdata/tiny/plugin.json")
			if !bytes.Equal(b.ManifestBytes, manifest) || string(b.Wasm) != tinyWasm {
				t.Error("the manifest or wasm bytes changed in the bundle")
			}
			want, err := ParseManifest(manifest)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, b.Manifest()); diff != "" {
				t.Errorf("Manifest() (-want +got):\n%s", diff)
			}
			opened, err := Open(b.ManifestBytes, b.Wasm, b.Signatures)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(opened.Bytes(), data) || opened.Digest() != b.Digest() {
				t.Error("Open of the same parts is a different bundle")
			}
		})
	}
	signed := mustDecode(t, fixtures.signed)
	if len(signed.Signatures) != 2 || !signed.Signatures[1].Expires.Equal(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("signatures after a round trip: %+v", signed.Signatures)
	}
	if d := curator.Evaluate(signed.Digest(), signed.Signatures, trustBoth(), fixedNow); !d.Allowed() {
		t.Fatalf("the signed fixture is refused: %v", d.Err)
	}
}

type tarEntry struct {
	hdr  tar.Header
	data []byte
}

func readTar(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{*h, body})
	}
}

func TestAddSignatureChangesNothingElse(t *testing.T) {
	loadFixtures(t)
	b := mustDecode(t, fixtures.unsigned)
	before := b.Bytes()
	digest := b.Digest()
	s := signing.Sign(fixtures.k1, digest, time.Time{})
	if changed, err := b.AddSignature(s); !changed || err != nil {
		t.Fatalf("AddSignature = %v, %v", changed, err)
	}
	after := b.Bytes()
	if b.Digest() != digest {
		t.Error("signing changed the digest")
	}
	eb, ea := readTar(t, before), readTar(t, after)
	if len(eb) != 3 || len(ea) != 3 {
		t.Fatalf("entries: %d before, %d after", len(eb), len(ea))
	}
	for i := 0; i < 2; i++ {
		if diff := cmp.Diff(eb[i], ea[i], cmp.AllowUnexported(tarEntry{})); diff != "" {
			t.Errorf("entry %s changed:\n%s", eb[i].hdr.Name, diff)
		}
	}
	if ea[2].hdr.Name != "signatures.json" || bytes.Equal(eb[2].data, ea[2].data) {
		t.Error("signatures.json did not change")
	}
	// Byte for byte: everything up to the signatures entry is the same.
	// The unsigned signatures.json fits one block: header, block, and the
	// two end-of-archive blocks follow the prefix.
	prefix := len(before) - 4*512
	if !bytes.Equal(before[:prefix], after[:prefix]) {
		t.Error("bytes before signatures.json changed")
	}

	// Adding the same signature again changes nothing.
	if changed, err := b.AddSignature(s); changed || err != nil {
		t.Errorf("adding a signature twice = %v, %v", changed, err)
	}
	// The same signature with its expiry in another zone is the same.
	s2 := signing.Sign(fixtures.k2, digest, time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	b.AddSignature(s2)
	s2.Expires = s2.Expires.In(time.FixedZone("X", 3600))
	if changed, _ := b.AddSignature(s2); changed {
		t.Error("the same signature with its expiry in another zone was added again")
	}
	if !bytes.Equal(mustDecode(t, b.Bytes()).Bytes(), b.Bytes()) {
		t.Error("a bundle with added signatures does not round-trip")
	}

	// At most MaxSignatures.
	for i := len(b.Signatures); i < MaxSignatures; i++ {
		if _, err := b.AddSignature(signing.Sign(fixtures.k1, digest, fixedNow.Add(time.Duration(i)*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	_, err := b.AddSignature(signing.Sign(fixtures.k2, digest, fixedNow))
	if !errors.Is(err, ErrInvalidBundle) {
		t.Errorf("signature %d: %v, want ErrInvalidBundle", MaxSignatures+1, err)
	}
	if _, err := DecodeBytes(b.Bytes()); err != nil {
		t.Errorf("a bundle with MaxSignatures signatures is refused: %v", err)
	}
}

// writeTar encodes entries with the canonical header fields, after mod
// changes them.
func writeTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func canonicalEntries(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	es := readTar(t, data)
	for i := range es {
		es[i].hdr = tar.Header{
			Typeflag: tar.TypeReg, Name: es[i].hdr.Name, Mode: 0o644, Size: int64(len(es[i].data)),
			ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR,
		}
	}
	return es
}

// claimSize writes the entries, then a header for name that claims size
// bytes, and nothing after it.
func claimSize(t *testing.T, entries []tarEntry, name string, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	// GNU format: sizes of 8 GiB and more need its base-256 numbers.
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: time.Unix(0, 0), Format: tar.FormatGNU}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes() // no Close: the claimed content never follows
}

func TestDecodeRefusals(t *testing.T) {
	loadFixtures(t)
	canon := func(f func(es []tarEntry) []tarEntry) []byte {
		return writeTar(t, f(canonicalEntries(t, fixtures.signed)))
	}
	if !bytes.Equal(canon(func(es []tarEntry) []tarEntry { return es }), fixtures.signed) {
		t.Fatal("test bug: canonicalEntries does not rebuild the canonical encoding")
	}
	withSigs := func(sigs string) []byte {
		return canon(func(es []tarEntry) []tarEntry {
			es[2].data = []byte(sigs)
			es[2].hdr.Size = int64(len(sigs))
			return es
		})
	}
	signedSig := mustDecode(t, fixtures.signed).Signatures[0]
	sigLine := func(expires string) string {
		e := ""
		if expires != "" {
			e = fmt.Sprintf(`"expires": %q, `, expires)
		}
		return fmt.Sprintf("{\"signatures\": [\n  {\"key_id\": %q, %s\"signature\": %q}\n]}\n", signedSig.KeyID, e, signedSig.EncodeSig())
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(fixtures.signed)
	zw.Close()

	negative := bytes.Clone(fixtures.signed[:512])
	for i := 124; i < 136; i++ {
		negative[i] = 0xff // base-256 size -1
	}
	setChecksum(negative)

	tooManySigs := "{\"signatures\": [" + strings.Repeat(fmt.Sprintf("\n  {\"key_id\": %q, \"signature\": %q},", signedSig.KeyID, signedSig.EncodeSig()), MaxSignatures+1)
	tooManySigs = strings.TrimSuffix(tooManySigs, ",") + "\n]}\n"

	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"empty", nil, "entry 1 (manifest.json): EOF"},
		{"text", []byte("hello, world\n"), "entry 1 (manifest.json)"},
		{"gzip of a bundle", gz.Bytes(), "entry 1"},
		{"only end blocks", make([]byte, 1024), "entry 1 (manifest.json): EOF"},
		{"manifest named plugin.json", canon(func(es []tarEntry) []tarEntry { es[0].hdr.Name = "plugin.json"; return es }), `entry 1 is "plugin.json", want regular file "manifest.json"`},
		{"name with ./", canon(func(es []tarEntry) []tarEntry { es[0].hdr.Name = "./manifest.json"; return es }), `entry 1 is "./manifest.json"`},
		{"name with directory", canon(func(es []tarEntry) []tarEntry { es[1].hdr.Name = "x/module.wasm"; return es }), `entry 2 is "x/module.wasm"`},
		{"wasm first", canon(func(es []tarEntry) []tarEntry { es[0], es[1] = es[1], es[0]; return es }), `entry 1 is "module.wasm"`},
		{"signatures first", canon(func(es []tarEntry) []tarEntry { return []tarEntry{es[2], es[0], es[1]} }), `entry 1 is "signatures.json"`},
		{"signatures missing", canon(func(es []tarEntry) []tarEntry { return es[:2] }), "entry 3 (signatures.json): EOF"},
		{"wasm missing", canon(func(es []tarEntry) []tarEntry { return []tarEntry{es[0], es[2]} }), `entry 2 is "signatures.json"`},
		{"entry twice", canon(func(es []tarEntry) []tarEntry { return []tarEntry{es[0], es[0], es[1], es[2]} }), `entry 2 is "manifest.json"`},
		{"fourth entry", canon(func(es []tarEntry) []tarEntry {
			return append(es, tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: "extra", Mode: 0o644, Size: 1, ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}, []byte("x")})
		}), "unexpected data after signatures.json"},
		{"directory entry", canon(func(es []tarEntry) []tarEntry {
			es[0].hdr.Typeflag, es[0].hdr.Size, es[0].data = tar.TypeDir, 0, nil
			return es
		}), `want regular file "manifest.json"`},
		{"symlink entry", canon(func(es []tarEntry) []tarEntry {
			es[1].hdr.Typeflag, es[1].hdr.Linkname, es[1].hdr.Size, es[1].data = tar.TypeSymlink, "/etc/passwd", 0, nil
			return es
		}), `want regular file "module.wasm"`},
		{"hard link entry", canon(func(es []tarEntry) []tarEntry {
			es[1].hdr.Typeflag, es[1].hdr.Linkname, es[1].hdr.Size, es[1].data = tar.TypeLink, "manifest.json", 0, nil
			return es
		}), `want regular file "module.wasm"`},
		{"PAX records", canon(func(es []tarEntry) []tarEntry {
			es[0].hdr.Format, es[0].hdr.PAXRecords = tar.FormatPAX, map[string]string{"comment": "hi"}
			return es
		}), "not in canonical form"},
		{"GNU format", canon(func(es []tarEntry) []tarEntry { es[1].hdr.Format = tar.FormatGNU; return es }), "not in canonical form"},
		{"mtime set", canon(func(es []tarEntry) []tarEntry { es[0].hdr.ModTime = fixedNow; return es }), "not in canonical form"},
		{"mode 0755", canon(func(es []tarEntry) []tarEntry { es[1].hdr.Mode = 0o755; return es }), "not in canonical form"},
		{"owner set", canon(func(es []tarEntry) []tarEntry { es[2].hdr.Uid, es[2].hdr.Uname = 1000, "alice"; return es }), "not in canonical form"},
		{"manifest claims 1 TiB", claimSize(t, nil, "manifest.json", 1<<40), "manifest.json is 1099511627776 bytes, the limit is 262144"},
		{"manifest one byte over", claimSize(t, nil, "manifest.json", MaxManifestBytes+1), "manifest.json is 262145 bytes, the limit is 262144"},
		{"wasm claims 1 TiB", claimSize(t, canonicalEntries(t, fixtures.signed)[:1], "module.wasm", 1<<40), "module.wasm is 1099511627776 bytes, the limit is 67108864"},
		{"wasm one byte over", claimSize(t, canonicalEntries(t, fixtures.signed)[:1], "module.wasm", MaxWasmBytes+1), "module.wasm is 67108865 bytes, the limit is 67108864"},
		{"signatures claim too much", claimSize(t, canonicalEntries(t, fixtures.signed)[:2], "signatures.json", MaxSignatureBytes+1), "signatures.json is 65537 bytes, the limit is 65536"},
		{"negative size", negative, "entry 1"},
		{"content shorter than claimed", fixtures.signed[:512+100], "the bundle ends early (truncated?): download or copy it again"},
		{"cut after the manifest's header", fixtures.signed[:512], "the bundle ends early (truncated?)"},
		{"cut inside the wasm's header", fixtures.signed[:len(canonicalEntries(t, fixtures.signed)[0].data)/512*512+1024+100], "the bundle ends early (truncated?)"},
		{"cut before the signatures", fixtures.signed[:len(fixtures.signed)-1024-512-512], "the bundle ends early (truncated?)"},
		{"no end-of-archive blocks", fixtures.signed[:len(fixtures.signed)-1024], "the bundle ends early (truncated?)"},
		{"one end block", fixtures.signed[:len(fixtures.signed)-512], "the bundle ends early (truncated?)"},
		{"cut by one byte", fixtures.signed[:len(fixtures.signed)-1], "the bundle ends early (truncated?): download or copy it again"},
		{"cut inside the end blocks", fixtures.signed[:len(fixtures.signed)-700], "the bundle ends early (truncated?)"},
		{"trailing byte", append(bytes.Clone(fixtures.signed), 'x'), "not in canonical form"},
		{"trailing zero block", append(bytes.Clone(fixtures.signed), make([]byte, 512)...), "not in canonical form"},
		{"trailing bundle", append(bytes.Clone(fixtures.signed), fixtures.signed...), "not in canonical form"},
		{"byte in the end blocks", func() []byte { b := bytes.Clone(fixtures.signed); b[len(b)-10] = 1; return b }(), "unexpected data after signatures.json"},
		{"module not WebAssembly", canon(func(es []tarEntry) []tarEntry {
			es[1].data = []byte("root:*:19000:0:99999:7:::\n")
			es[1].hdr.Size = int64(len(es[1].data))
			return es
		}), "the module is not WebAssembly: it starts with 72 6f 6f 74"},
		{"bad manifest", canon(func(es []tarEntry) []tarEntry {
			es[0].data = []byte(`{"name":"tiny","Name":"x"}`)
			es[0].hdr.Size = int64(len(es[0].data))
			return es
		}), "case-sensitive"},
		{"signatures not JSON", withSigs("nope"), "signatures.json"},
		{"signatures with a case-variant key", withSigs(`{"signatures": [], "Signatures": []}`), "case-sensitive"},
		{"signatures with a duplicate key", withSigs(`{"signatures": [], "signatures": []}`), "duplicate key"},
		{"signature with an unknown key", withSigs(`{"signatures": [{"key_id": "0123456789abcdef", "signature": "", "sig": ""}]}`), `unknown key "sig"`},
		{"signatures reformatted", withSigs(strings.ReplaceAll(sigLine(""), "\n", "")), "not in canonical form"},
		{"key ID uppercase", withSigs(strings.Replace(sigLine(""), signedSig.KeyID.String(), strings.ToUpper(signedSig.KeyID.String()), 1)), "signature 1"},
		{"key ID short", withSigs(strings.Replace(sigLine(""), signedSig.KeyID.String(), signedSig.KeyID.String()[2:], 1)), "signature 1"},
		{"signature short", withSigs(strings.Replace(sigLine(""), signedSig.EncodeSig(), signedSig.EncodeSig()[4:], 1)), "signature 1"},
		{"expires with fraction", withSigs(sigLine("2099-01-01T00:00:00.5Z")), "not in the form"},
		{"expires in another zone", withSigs(sigLine("2099-01-01T01:00:00+01:00")), "not in the form"},
		{"expires lowercase z", withSigs(sigLine("2099-01-01t00:00:00z")), "signature 1"},
		{"expires zero time", withSigs(sigLine("0001-01-01T00:00:00Z")), "not in the form"},
		{"expires not a time", withSigs(sigLine("tomorrow")), "expires"},
		{"too many signatures", withSigs(tooManySigs), "33 signatures, the limit is 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := DecodeBytes(tt.data)
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tt.wantErr)
			}
			if b != nil {
				t.Error("returned a bundle with the error")
			}
			if !errors.Is(err, ErrInvalidBundle) && !errors.Is(err, ErrInvalidManifest) {
				t.Errorf("error wraps neither ErrInvalidBundle nor ErrInvalidManifest: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q\ndoes not contain %q", err, tt.wantErr)
			}
			if _, err2 := Decode(bytes.NewReader(tt.data)); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("Decode and DecodeBytes disagree: %v / %v", err2, err)
			}
		})
	}
}

// setChecksum recomputes a ustar header block's checksum.
func setChecksum(blk []byte) {
	copy(blk[148:156], "        ")
	var sum int64
	for _, c := range blk[:512] {
		sum += int64(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
}

// countingReader is an endless stream that counts what was read.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += int64(len(p))
	return len(p), nil // whatever p holds: Decode must stop by size alone
}

func TestDecodeReadsAtMostTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	loadFixtures(t)
	r := &countingReader{}
	_, err := Decode(r)
	if !errors.Is(err, ErrInvalidBundle) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Decode(endless stream) = %v", err)
	}
	if r.n > MaxBundleBytes+1+512<<10 { // io.ReadAll reads in chunks
		t.Errorf("read %d bytes of an endless stream; the limit is %d", r.n, MaxBundleBytes)
	}
	if _, err := DecodeBytes(make([]byte, MaxBundleBytes+1)); !errors.Is(err, ErrInvalidBundle) {
		t.Errorf("DecodeBytes(too large) = %v", err)
	}
	if _, err := NewBundle(mustDecode(t, fixtures.unsigned).ManifestBytes, make([]byte, MaxWasmBytes+1)); !errors.Is(err, ErrInvalidBundle) {
		t.Errorf("NewBundle(wasm too large) = %v", err)
	}
}

// TestEveryByteMatters changes each byte of a signed bundle and checks that
// the result is never accepted: Decode refuses it, or the trust policy does
// (the digest or a signature no longer matches).
func TestEveryByteMatters(t *testing.T) {
	loadFixtures(t)
	ts := trustBoth()
	orig := fixtures.signed
	if d := curator.Evaluate(mustDecode(t, orig).Digest(), mustDecode(t, orig).Signatures, ts, fixedNow); !d.Allowed() {
		t.Fatalf("the unmodified bundle is refused: %v", d.Err)
	}
	masks := []byte{0xff, 0x01, 0x20}
	stride := 1
	if raceEnabled {
		masks = masks[:1] // the race detector makes each decode ~5x slower
	}
	if testing.Short() {
		// A prime stride still reaches every header field and every entry.
		stride, masks = 7, masks[:1]
	}
	var decoded, checked int
	buf := make([]byte, len(orig))
	for i := 0; i < len(orig); i += stride {
		for _, m := range masks {
			copy(buf, orig)
			buf[i] ^= m
			checked++
			b, err := DecodeBytes(buf)
			if err != nil {
				continue
			}
			decoded++
			if d := curator.Evaluate(b.Digest(), b.Signatures, ts, fixedNow); d.Allowed() {
				t.Fatalf("byte %d ^ %#x: the changed bundle is accepted (signers %v)", i, m, d.Signers)
			}
		}
	}
	t.Logf("%d of %d bytes changed (%d variants): %d decoded and were refused by the policy, the rest by Decode", (len(orig)+stride-1)/stride, len(orig), checked, decoded)
}

// TestMixAndMatch combines parts of two signed bundles: a manifest from one
// with the wasm or the signatures of the other never passes.
func TestMixAndMatch(t *testing.T) {
	loadFixtures(t)
	a := mustDecode(t, fixtures.signed)
	otherWasm := tinyWasm + "\x00\x01\x00" // plus an empty custom section
	otherManifest := bytes.Replace(a.ManifestBytes, []byte(`"version": "1.0.0"`), []byte(`"version": "1.0.1"`), 1)
	b, err := NewBundle(otherManifest, []byte(otherWasm))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []signing.PrivateKey{fixtures.k1, fixtures.k2} {
		b.AddSignature(signing.Sign(k, b.Digest(), time.Time{}))
	}
	ts := trustBoth()
	if d := curator.Evaluate(b.Digest(), b.Signatures, ts, fixedNow); !d.Allowed() {
		t.Fatal(d.Err)
	}
	for name, parts := range map[string]struct {
		manifest, wasm []byte
		sigs           []signing.Signature
	}{
		"manifest A, wasm B, signatures A": {a.ManifestBytes, b.Wasm, a.Signatures},
		"manifest A, wasm B, signatures B": {a.ManifestBytes, b.Wasm, b.Signatures},
		"manifest B, wasm A, signatures B": {b.ManifestBytes, a.Wasm, b.Signatures},
		"manifest A, wasm A, signatures B": {a.ManifestBytes, a.Wasm, b.Signatures},
		"one signature from each":          {a.ManifestBytes, a.Wasm, []signing.Signature{a.Signatures[0], b.Signatures[1]}},
	} {
		mixed, err := Open(parts.manifest, parts.wasm, parts.sigs)
		if err != nil {
			t.Fatal(err)
		}
		d := curator.Evaluate(mixed.Digest(), mixed.Signatures, ts, fixedNow)
		if d.Allowed() {
			t.Errorf("%s: accepted", name)
		} else if !errors.Is(d.Err, curator.ErrBadSignature) && !errors.Is(d.Err, curator.ErrBelowThreshold) {
			t.Errorf("%s: %v", name, d.Err)
		}
		// And through the file form too.
		if _, err := DecodeBytes(mixed.Bytes()); err != nil {
			t.Errorf("%s: the re-encoded mix does not decode: %v", name, err)
		}
	}
}

func TestSignaturesJSON(t *testing.T) {
	loadFixtures(t)
	d := mustDecode(t, fixtures.unsigned).Digest()
	s1 := signing.Sign(fixtures.k1, d, time.Time{})
	s2 := signing.Sign(fixtures.k2, d, time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))

	if got := string(EncodeSignaturesJSON(nil)); got != "{\"signatures\": []}\n" {
		t.Errorf("no signatures: %q", got)
	}
	want := fmt.Sprintf("{\"signatures\": [\n  {\"key_id\": %q, \"signature\": %q},\n  {\"key_id\": %q, \"expires\": \"2099-01-01T00:00:00Z\", \"signature\": %q}\n]}\n",
		s1.KeyID, s1.EncodeSig(), s2.KeyID, s2.EncodeSig())
	if got := string(EncodeSignaturesJSON([]signing.Signature{s1, s2})); got != want {
		t.Errorf("EncodeSignaturesJSON =\n%s\nwant\n%s", got, want)
	}
	for _, sigs := range [][]signing.Signature{nil, {s1}, {s2}, {s1, s2}, {s2, s1, s2}} {
		got, err := DecodeSignaturesJSON(EncodeSignaturesJSON(sigs))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sigs, got, cmpEmptyNil); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	// Other spellings of the same JSON decode too (the store keeps its
	// own copy); the bundle form is pinned by Decode's canonical check.
	got, err := DecodeSignaturesJSON([]byte(fmt.Sprintf(`{"signatures":[{"signature":%q,"key_id":%q}]}`, s1.EncodeSig(), s1.KeyID)))
	if err != nil || len(got) != 1 || got[0] != s1 {
		t.Errorf("compact form: %v, %v", got, err)
	}
}

var cmpEmptyNil = cmp.Comparer(func(a, b []signing.Signature) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].KeyID != b[i].KeyID || a[i].Sig != b[i].Sig || !a[i].Expires.Equal(b[i].Expires) {
			return false
		}
	}
	return true
})
