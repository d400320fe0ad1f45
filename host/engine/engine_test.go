package engine

import (
	"context"
	"testing"
	"time"
)

func TestWithinBudget(t *testing.T) {
	bg := context.Background()
	if WithinBudget(bg, 1000) {
		t.Error("a context without a deadline is within any budget")
	}
	soon, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	if !WithinBudget(soon, 1000) {
		t.Error("a deadline 100 ms away is not within a 1 s budget")
	}
	if WithinBudget(soon, 10) {
		t.Error("a deadline 100 ms away is within a 10 ms budget")
	}
	// What Budget derives is within the same budget.
	b, cancel2 := Budget(bg, 500)
	defer cancel2()
	if !WithinBudget(b, 500) {
		t.Error("Budget's own context is not within its budget")
	}
}
