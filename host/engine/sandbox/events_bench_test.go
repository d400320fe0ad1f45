package sandbox

import (
	"context"
	"testing"

	"github.com/toolhost/toolhost/host/engine/enginetest"
)

func BenchmarkEvents(b *testing.B) {
	e, err := NewInProcess("")
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	enginetest.BenchmarkEvents(b, e)
}
