package plugin

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/jpeg" // icon sizes
	_ "image/png"
	"strings"
)

// MaxIconBytes bounds a plugin's icon, decoded. An icon is shown next to
// each of the plugin's tools in clients that draw them: a small raster
// image is all that needs.
const MaxIconBytes = 16 << 10

// iconMagic is the leading bytes of each accepted image type. Raster only:
// an SVG is a document that can carry script and external references, and
// a client that renders it carelessly would run what a plugin put there.
var iconMagic = map[string]func([]byte) bool{
	"image/png":  func(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) },
	"image/jpeg": func(b []byte) bool { return bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}) },
	"image/webp": func(b []byte) bool {
		return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
	},
}

// ParseIcon checks a manifest's icon: a data URI
// ("data:image/png;base64,…"; PNG, JPEG or WebP, at most MaxIconBytes
// decoded) whose bytes are the image type it names. It returns the media
// type and the image.
func ParseIcon(uri string) (mimeType string, img []byte, err error) {
	rest, ok := strings.CutPrefix(uri, "data:")
	if !ok {
		return "", nil, fmt.Errorf("must be a data: URI (data:image/png;base64,…): the image is signed with the manifest, so it cannot be a link")
	}
	mimeType, b64, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return "", nil, fmt.Errorf("must be base64 data (data:%s;base64,…)", truncate(mimeType))
	}
	isType, ok := iconMagic[mimeType]
	if !ok {
		return "", nil, fmt.Errorf("type %q is not accepted: use image/png, image/jpeg or image/webp (no SVG: it can carry script)", truncate(mimeType))
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > MaxIconBytes+2 {
		return "", nil, fmt.Errorf("is larger than %d KiB decoded; use a smaller image (e.g. 64×64)", MaxIconBytes>>10)
	}
	img, err = base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return "", nil, fmt.Errorf("base64: %v", err)
	}
	if len(img) == 0 || len(img) > MaxIconBytes {
		return "", nil, fmt.Errorf("is %d bytes decoded; it must be 1 to %d", len(img), MaxIconBytes)
	}
	if !isType(img) {
		return "", nil, fmt.Errorf("says %s but the data is not a %s image", mimeType, strings.TrimPrefix(mimeType, "image/"))
	}
	if mimeType != "image/webp" && IconSize(img) == "" {
		return "", nil, fmt.Errorf("is not a readable %s image (its header is damaged)", strings.TrimPrefix(mimeType, "image/"))
	}
	return mimeType, img, nil
}

// IconSize is the icon's size as MCP writes it ("64x64"), or "" when the
// image's header does not say (WebP, which the standard library does not
// read).
func IconSize(img []byte) string {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return ""
	}
	return fmt.Sprintf("%dx%d", cfg.Width, cfg.Height)
}
