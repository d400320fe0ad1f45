package home_test

import (
	"os"
	"testing"

	"github.com/toolhost/toolhost/home"
	"github.com/toolhost/toolhost/internal/testplugins"
)

// TestMain doubles as the sandbox worker, through the hook a program
// that opens a home with its own executable calls (home.RunWorker).
func TestMain(m *testing.M) {
	if code, ok := home.RunWorker(); ok {
		os.Exit(code)
	}
	os.Exit(testplugins.Main(m))
}
