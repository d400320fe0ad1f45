package plugin

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/toolhost/toolhost/internal/strictjson"
	"github.com/toolhost/toolhost/internal/userfile"
	"github.com/toolhost/toolhost/signing"
)

// ErrInvalidBundle is wrapped by every error about a bundle's bytes.
var ErrInvalidBundle = errors.New("invalid plugin bundle")

// Size caps, checked before anything is read into memory.
const (
	MaxWasmBytes       = 64 << 20
	MaxSignatureBytes  = 64 << 10
	MaxSignatures      = 32
	MaxBundleBytes     = MaxManifestBytes + MaxWasmBytes + MaxSignatureBytes + 16<<10
	bundleManifestName = "manifest.json"
	bundleWasmName     = "module.wasm"
	bundleSigsName     = "signatures.json"
)

// Bundle is a packed plugin: the exact manifest bytes, the wasm executor and
// the curator signatures over their digest. A Bundle from Decode has a
// manifest that parsed and validated; it is not yet trusted.
type Bundle struct {
	ManifestBytes []byte
	Wasm          []byte
	Signatures    []signing.Signature

	manifest *Manifest
}

// Manifest returns the parsed manifest.
func (b *Bundle) Manifest() *Manifest { return b.manifest }

// WasmSHA256 returns the sha256 of the wasm executor.
func (b *Bundle) WasmSHA256() [32]byte { return sha256.Sum256(b.Wasm) }

// Digest returns the plugin digest that curators sign.
func (b *Bundle) Digest() signing.Digest {
	return signing.PluginDigest(b.ManifestBytes, b.WasmSHA256())
}

// NewBundle validates the manifest and makes an unsigned bundle.
func NewBundle(manifest, wasm []byte) (*Bundle, error) {
	m, err := ParseManifest(manifest)
	if err != nil {
		return nil, err
	}
	if len(wasm) > MaxWasmBytes {
		return nil, fmt.Errorf("%w: wasm is %d bytes, the limit is %d", ErrInvalidBundle, len(wasm), MaxWasmBytes)
	}
	if err := checkWasmHeader(wasm); err != nil {
		return nil, err
	}
	return &Bundle{ManifestBytes: manifest, Wasm: wasm, manifest: m}, nil
}

// PackDir reads DIR/plugin.json and the wasm file it names and returns an
// unsigned bundle. Both must be regular files inside DIR: a symbolic link
// that leads out of DIR is refused, so what is packed is what a reviewer
// of DIR saw, and a named pipe or device is refused without waiting on it.
func PackDir(dir string) (*Bundle, error) {
	manifest, err := readPackFile(dir, "plugin.json", MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(manifest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "plugin.json"), err)
	}
	wasm, err := readPackFile(dir, m.Wasm, MaxWasmBytes)
	if err != nil {
		return nil, err
	}
	b, err := NewBundle(manifest, wasm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, m.Wasm), err)
	}
	return b, nil
}

// readPackFile reads one file of a plugin directory, saying in each
// refusal what to do about it.
func readPackFile(dir, name string, limit int64) ([]byte, error) {
	data, err := userfile.ReadIn(dir, name, limit)
	var esc *userfile.EscapeError
	var nr *userfile.NotRegularError
	var big *userfile.TooLargeError
	switch {
	case err == nil:
		return data, nil
	case errors.As(err, &esc):
		return nil, fmt.Errorf("plugin: %w: pack reads only files inside the plugin directory (so the bundle holds what was reviewed there); copy the file into %s instead of linking to it", err, dir)
	case errors.As(err, &nr):
		return nil, fmt.Errorf("plugin: %w: put the %s file itself in %s", err, name, dir)
	case errors.As(err, &big):
		return nil, fmt.Errorf("plugin: %w; make it smaller", err)
	case errors.Is(err, fs.ErrNotExist) && name == "plugin.json":
		return nil, fmt.Errorf("plugin: %w: a plugin directory holds plugin.json (make one with `toolhost plugin init NAME`)", err)
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("plugin: %w: build the module to the file plugin.json's \"wasm\" names", err)
	}
	return nil, fmt.Errorf("plugin: %w", err)
}

// AddSignature appends s unless a signature by the same key over the same
// expiry is already present. It reports whether the bundle changed.
func (b *Bundle) AddSignature(s signing.Signature) (bool, error) {
	for _, have := range b.Signatures {
		if have.KeyID == s.KeyID && have.Sig == s.Sig && have.Expires.Equal(s.Expires) {
			return false, nil
		}
	}
	if len(b.Signatures) >= MaxSignatures {
		return false, fmt.Errorf("%w: a bundle holds at most %d signatures", ErrInvalidBundle, MaxSignatures)
	}
	b.Signatures = append(b.Signatures, s)
	return true, nil
}

// Encode writes the bundle in its canonical form: a ustar archive holding
// manifest.json, module.wasm and signatures.json, in that order, with fixed
// metadata. The same bundle always encodes to the same bytes.
func (b *Bundle) Encode(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{
		{bundleManifestName, b.ManifestBytes},
		{bundleWasmName, b.Wasm},
		{bundleSigsName, encodeSignatures(b.Signatures)},
	} {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.data)),
			ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("plugin: encode bundle: %w", err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("plugin: encode bundle: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("plugin: encode bundle: %w", err)
	}
	return nil
}

// Bytes returns the canonical encoding.
func (b *Bundle) Bytes() []byte {
	var buf bytes.Buffer
	_ = b.Encode(&buf) // writing to a bytes.Buffer cannot fail
	return buf.Bytes()
}

// Decode reads a bundle from r, reading at most MaxBundleBytes. Anything but
// the canonical encoding of a valid bundle is refused, so no byte of a bundle
// can change without Decode failing or the digest or a signature changing.
func Decode(r io.Reader) (*Bundle, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBundleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("plugin: read bundle: %w", err)
	}
	if len(data) > MaxBundleBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalidBundle, MaxBundleBytes)
	}
	return DecodeBytes(data)
}

// DecodeBytes is Decode over a byte slice.
func DecodeBytes(data []byte) (*Bundle, error) {
	if len(data) > MaxBundleBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalidBundle, MaxBundleBytes)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	var parts [3][]byte
	for i, want := range []struct {
		name  string
		limit int64
	}{{bundleManifestName, MaxManifestBytes}, {bundleWasmName, MaxWasmBytes}, {bundleSigsName, MaxSignatureBytes}} {
		hdr, err := tr.Next()
		if err != nil {
			if endsEarly(data, err, i) {
				return nil, errTruncated()
			}
			return nil, fmt.Errorf("%w: entry %d (%s): %v; is this a file made by `toolhost plugin pack`?", ErrInvalidBundle, i+1, want.name, err)
		}
		if hdr.Name != want.name || hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%w: entry %d is %q, want regular file %q", ErrInvalidBundle, i+1, truncate(hdr.Name), want.name)
		}
		if hdr.Size < 0 || hdr.Size > want.limit {
			return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrInvalidBundle, want.name, hdr.Size, want.limit)
		}
		buf := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, buf); err != nil {
			if endsEarly(data, err, len(parts)) {
				return nil, errTruncated()
			}
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidBundle, want.name, err)
		}
		parts[i] = buf
	}
	if _, err := tr.Next(); err != io.EOF {
		if endsEarly(data, err, len(parts)) {
			return nil, errTruncated()
		}
		return nil, fmt.Errorf("%w: unexpected data after %s", ErrInvalidBundle, bundleSigsName)
	}
	sigs, err := decodeSignatures(parts[2])
	if err != nil {
		return nil, err
	}
	b, err := NewBundle(parts[0], parts[1])
	if err != nil {
		return nil, err
	}
	b.Signatures = sigs
	if canonical := b.Bytes(); !bytes.Equal(canonical, data) {
		if bytes.HasPrefix(canonical, data) {
			return nil, errTruncated() // cut at a block boundary, in or before the end blocks
		}
		return nil, fmt.Errorf("%w: not in canonical form (a byte was changed, or it was not written by toolhost)", ErrInvalidBundle)
	}
	return b, nil
}

// errTruncated is the error for a bundle whose bytes stop before its
// end-of-archive blocks: an interrupted download or copy, the commonest
// damage, and one the reader can fix.
func errTruncated() error {
	return fmt.Errorf("%w: the bundle ends early (truncated?): download or copy it again", ErrInvalidBundle)
}

// endsEarly reports whether err, met reading archive entry entry (0-based;
// len(parts) for the end blocks) of data, means the bytes stopped
// mid-archive. The tar reader says io.ErrUnexpectedEOF when they stop
// inside a block; when they stop at a block boundary it says io.EOF, as it
// does at a proper end (two zero blocks), so io.EOF counts only where an
// entry was still due and data does not end with the end blocks. Before
// the first header, only a file that starts like a bundle was cut short:
// a short text file is not a truncated bundle.
func endsEarly(data []byte, err error, entry int) bool {
	if !bytes.HasPrefix(data, []byte(bundleManifestName+"\x00")) {
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	if !errors.Is(err, io.EOF) || entry == 0 {
		return false
	}
	return len(data) < 1024 || !bytes.Equal(data[len(data)-1024:], make([]byte, 1024))
}

type signatureJSON struct {
	KeyID     string `json:"key_id"`
	Expires   string `json:"expires,omitempty"`
	Signature string `json:"signature"`
}

type signaturesFile struct {
	Signatures []signatureJSON `json:"signatures"`
}

var signaturesShape = strictjson.Object{
	"signatures": strictjson.ArrayOf{Elem: strictjson.Object{
		"key_id": strictjson.Any{}, "expires": strictjson.Any{}, "signature": strictjson.Any{},
	}},
}

func encodeSignatures(sigs []signing.Signature) []byte {
	var buf bytes.Buffer
	buf.WriteString("{\"signatures\": [")
	for i, s := range sigs {
		if i > 0 {
			buf.WriteString(",")
		}
		fmt.Fprintf(&buf, "\n  {\"key_id\": %q, ", s.KeyID.String())
		if !s.Expires.IsZero() {
			fmt.Fprintf(&buf, "\"expires\": %q, ", s.Expires.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(&buf, "\"signature\": %q}", s.EncodeSig())
	}
	if len(sigs) > 0 {
		buf.WriteString("\n")
	}
	buf.WriteString("]}\n")
	return buf.Bytes()
}

func decodeSignatures(data []byte) ([]signing.Signature, error) {
	var f signaturesFile
	if err := strictjson.Decode(data, signaturesShape, &f); err != nil {
		return nil, fmt.Errorf("%w: signatures.json: %v", ErrInvalidBundle, err)
	}
	if len(f.Signatures) > MaxSignatures {
		return nil, fmt.Errorf("%w: %d signatures, the limit is %d", ErrInvalidBundle, len(f.Signatures), MaxSignatures)
	}
	out := make([]signing.Signature, 0, len(f.Signatures))
	for i, sj := range f.Signatures {
		var s signing.Signature
		var err error
		if s.KeyID, err = signing.ParseKeyID(sj.KeyID); err != nil {
			return nil, fmt.Errorf("%w: signature %d: %v", ErrInvalidBundle, i+1, err)
		}
		if s.Sig, err = signing.DecodeSig(sj.Signature); err != nil {
			return nil, fmt.Errorf("%w: signature %d: %v", ErrInvalidBundle, i+1, err)
		}
		if sj.Expires != "" {
			if s.Expires, err = time.Parse(time.RFC3339, sj.Expires); err != nil {
				return nil, fmt.Errorf("%w: signature %d: expires: %v", ErrInvalidBundle, i+1, err)
			}
			s.Expires = s.Expires.UTC()
			// The signature covers whole seconds only: refuse fractions,
			// other zones and the zero time, so no other spelling of the
			// expiry verifies.
			if s.Expires.IsZero() || s.Expires.Format(time.RFC3339) != sj.Expires {
				return nil, fmt.Errorf("%w: signature %d: expires %q is not in the form 2006-01-02T15:04:05Z", ErrInvalidBundle, i+1, truncate(sj.Expires))
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// EncodeSignaturesJSON and DecodeSignaturesJSON expose the signatures.json
// form for the store, which keeps signatures next to the exact manifest.
func EncodeSignaturesJSON(sigs []signing.Signature) []byte { return encodeSignatures(sigs) }

// DecodeSignaturesJSON parses the form EncodeSignaturesJSON writes.
func DecodeSignaturesJSON(data []byte) ([]signing.Signature, error) { return decodeSignatures(data) }

// Open re-creates a Bundle from parts already held (e.g. by the store),
// parsing and validating the manifest again.
func Open(manifest, wasm []byte, sigs []signing.Signature) (*Bundle, error) {
	b, err := NewBundle(manifest, wasm)
	if err != nil {
		return nil, err
	}
	b.Signatures = sigs
	return b, nil
}
