package serve

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAbsModelPath: a --model naming a file by a relative path becomes
// absolute (it showed in /api/show's FROM as the daemon's own relative
// path); names, absolute paths and paths to nothing stay as given.
func TestAbsModelPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll("sub", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sub/m.gguf", "here.GGUF"} {
		if err := os.WriteFile(f, []byte("GGUF"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	real, _ := filepath.EvalSymlinks(dir)
	abs := func(p string) string {
		a, _ := filepath.Abs(p)
		return a
	}
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"llama3", "llama3"},
		{"sub/m.gguf", abs("sub/m.gguf")},
		{"./sub/m.gguf", abs("sub/m.gguf")},
		{"here.GGUF", abs("here.GGUF")},
		{"missing.gguf", "missing.gguf"},
		{"sub", "sub"},
		{filepath.Join(real, "sub/m.gguf"), filepath.Join(real, "sub/m.gguf")},
	} {
		if got := absModelPath(tc.in); got != tc.want {
			t.Errorf("absModelPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
