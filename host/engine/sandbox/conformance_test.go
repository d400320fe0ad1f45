package sandbox

import (
	"testing"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/enginetest"
)

func TestConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		e, err := NewInProcess(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
}
