// Package testpath finds the shared test assets (../shared beside the
// repository) for tests, whatever package directory they run in.
package testpath

import (
	"os"
	"path/filepath"
	"testing"
)

// Root returns the repository root: the nearest directory upwards from the
// working directory that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Shared returns the path of name under ../shared, skipping the test with
// a clear reason when it is absent.
func Shared(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Root(t), "..", "shared", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test asset %s not found (%v): clone ../shared beside the repository", p, err)
	}
	return p
}

// SharedIfPresent returns the path of name under ../shared, or "" when it
// is absent, for tests that run with or without it.
func SharedIfPresent(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Root(t), "..", "shared", name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
