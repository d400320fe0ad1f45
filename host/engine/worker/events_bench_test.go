package worker

import (
	"testing"

	"github.com/toolhost/toolhost/host/engine/enginetest"
)

func BenchmarkEvents(b *testing.B) {
	enginetest.BenchmarkEvents(b, newTestPool(b, Options{Workers: 1}))
}
