package worker

import (
	"context"
	"strings"
	"testing"
)

// Workers out of range is refused before any process starts: a negative
// count used to mean 2, and a huge one started that many processes one
// after another.
func TestNewPoolRefusesWorkersOutOfRange(t *testing.T) {
	for _, n := range []int{-3, MaxPoolWorkers + 1, 100000} {
		// The command does not exist: reaching the start of a worker would
		// fail differently.
		p, err := NewPool(context.Background(), Options{Command: []string{"/nonexistent/toolhost"}, Workers: n})
		if err == nil {
			p.Close(context.Background())
			t.Fatalf("Workers %d: accepted", n)
		}
		if !strings.Contains(err.Error(), "out of range: use 1 to 256, or 0 for 2") {
			t.Errorf("Workers %d: %v", n, err)
		}
	}
}
