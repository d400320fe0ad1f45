package store

import (
	"testing"

	"github.com/toolhost/toolhost/signing"
)

// A mark is stored as JSON with its digest; a mark written before marks
// held digests (the bare version) still reads, as a mark without one.
func TestHighWaterMarkEncoding(t *testing.T) {
	d := signing.PluginDigest([]byte(`{"name":"rb"}`), [32]byte{1})
	for _, tc := range []struct {
		stored string
		want   HighWaterMark
	}{
		{"2.0.0", HighWaterMark{Version: "2.0.0"}},
		{string(HighWaterMark{Version: "2.0.0", Digest: d}.encode()), HighWaterMark{Version: "2.0.0", Digest: d}},
		{string(HighWaterMark{Version: "2.0.0"}.encode()), HighWaterMark{Version: "2.0.0"}},
		{`{"version": 1`, HighWaterMark{Version: `{"version": 1`}}, // damaged: does not parse as a version
	} {
		if got := decodeHighWater([]byte(tc.stored)); got != tc.want {
			t.Errorf("decode %q = %+v, want %+v", tc.stored, got, tc.want)
		}
	}
}
