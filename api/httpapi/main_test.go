package httpapi

import (
	"os"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugins"
)

// TestMain gives every real host of this package one compilation cache:
// the time, guard, fetch and notes Go guests compile once per run instead
// of once per test (minutes each under -race).
func TestMain(m *testing.M) { os.Exit(testplugins.Main(m)) }
