package worker

import (
	"testing"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/enginetest"
)

func TestConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) engine.Engine { return newTestPool(t, Options{Workers: 2}) })
}
