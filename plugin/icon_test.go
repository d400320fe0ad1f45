package plugin

import (
	"encoding/base64"
	"strings"
	"testing"
)

// clockIcon is the time sample's icon: a 32×32 PNG.
const clockIcon = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAYAAABzenr0AAAAv0lEQVR4nOyXyQ3CMBBFYUQ30AsUAtVAIdAL1AMSkiWkzEpmO/hfY/33YjtOApvi7CyD9+f7WzPudTtttZ3iQC30Xxl2CdbCNR2kgAdc04UKWODP63GVxELA88413ZAFpxiQCcdY5QdRD4HM6R8ZzB4zMAUqY3odU+GO48PlESsgAaSUL8EU+ApYvuG8Mpg9ZqCFQOYy/LKAupABXwhES2Dd6B6IkKA6yU3oKcF1sU+Bh4TUYQJE/JyW5xMAAP//1TpKQ05ASVcAAAAASUVORK5CYII="

func TestParseIconAcceptsSmallRasterImages(t *testing.T) {
	mimeType, img, err := ParseIcon(clockIcon)
	if err != nil {
		t.Fatal(err)
	}
	if mimeType != "image/png" || IconSize(img) != "32x32" {
		t.Fatalf("got %s %s", mimeType, IconSize(img))
	}
	webp := "RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"
	if mimeType, _, err := ParseIcon("data:image/webp;base64," + base64.StdEncoding.EncodeToString([]byte(webp))); err != nil || mimeType != "image/webp" {
		t.Fatalf("webp: %s %v", mimeType, err)
	}
}

func TestParseIconRefusesWhatIsNotASmallRasterImage(t *testing.T) {
	png := clockIcon[len("data:image/png;base64,"):]
	raw, _ := base64.StdEncoding.DecodeString(png)
	svg := base64.StdEncoding.EncodeToString([]byte("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"))
	big := base64.StdEncoding.EncodeToString(append(raw, make([]byte, MaxIconBytes)...))
	for _, c := range []struct{ uri, want string }{
		{"https://example.com/icon.png", "data: URI"},
		{"data:image/png," + png, "base64"},
		{"data:image/svg+xml;base64," + svg, "no SVG"},
		{"data:text/html;base64," + png, "not accepted"},
		{"data:image/jpeg;base64," + png, "not a jpeg image"},
		{"data:image/png;base64," + png + "!", "base64"},
		{"data:image/png;base64," + big, "larger than 16 KiB"},
		{"data:image/png;base64,", "0 bytes"},
		{"data:image/png;base64," + base64.StdEncoding.EncodeToString(raw[:20]), "damaged"},
	} {
		if _, _, err := ParseIcon(c.uri); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseIcon(%.60q) = %v; want an error saying %q", c.uri, err, c.want)
		}
	}
}

func TestManifestIconIsChecked(t *testing.T) {
	base := `{"name":"p","version":"1.0.0","description":"d","wasm":"p.wasm","tools":[{"name":"t","description":"d","parameters":{"type":"object"}}]`
	m, err := ParseManifest([]byte(base + `,"icon":"` + clockIcon + `"}`))
	if err != nil || m.Icon != clockIcon {
		t.Fatalf("good icon: %v", err)
	}
	if _, err := ParseManifest([]byte(base + `,"icon":"https://example.com/i.png"}`)); err == nil || !strings.Contains(err.Error(), "icon must be a data: URI") {
		t.Fatalf("linked icon: %v", err)
	}
}

func FuzzParseIcon(f *testing.F) {
	f.Add(clockIcon)
	f.Add("data:image/webp;base64,UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")
	f.Add("data:image/jpeg;base64,/9j/")
	f.Fuzz(func(t *testing.T, uri string) {
		mimeType, img, err := ParseIcon(uri)
		if err != nil {
			return
		}
		if len(img) == 0 || len(img) > MaxIconBytes || iconMagic[mimeType] == nil || !iconMagic[mimeType](img) {
			t.Fatalf("accepted %s of %d bytes", mimeType, len(img))
		}
	})
}
