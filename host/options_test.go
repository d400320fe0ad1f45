package host_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/store"
)

// A negative admission limit is refused, naming the field; it used to
// become the default without a word.
func TestNewRefusesNegativeLimits(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	engine, err := sandbox.NewInProcess(testplugins.CacheDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		opts  host.Options
	}{
		{"MaxInFlight", host.Options{MaxInFlight: -1}},
		{"MaxInFlightPerPlugin", host.Options{MaxInFlightPerPlugin: -1}},
		{"MaxQueued", host.Options{MaxQueued: -5}},
	} {
		tc.opts.Store, tc.opts.Engine = st, engine
		h, err := host.New(tc.opts)
		if err == nil {
			h.Close()
			t.Errorf("%s negative: accepted", tc.field)
			continue
		}
		if !strings.Contains(err.Error(), "Options."+tc.field) || !strings.Contains(err.Error(), "0 for the default") {
			t.Errorf("%s negative: %v", tc.field, err)
		}
	}
}
