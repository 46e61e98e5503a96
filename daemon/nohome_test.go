package daemon

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDefaultConfigWithoutHome: without $HOME (a system service, env -i)
// DefaultConfig still answers, with the XDG directories that are set and
// none where $HOME was needed, and CheckDirs names the flag to give. It
// failed ("default config: $HOME is not defined"), and ruvllmd could not
// start even with every directory given by flag.
func TestDefaultConfigWithoutHome(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("XDG directories are Linux's")
	}
	t.Setenv("HOME", "")
	t.Setenv("RUVLLM_SOCKET", "/run/test/ruvllm.sock")
	for _, tc := range []struct {
		name            string
		config, data    string
		cache           string
		wantState       string
		wantErrFlagName string
	}{
		{"no XDG directories", "", "", "", "", "--state-dir"},
		{"config only", "/x/config", "", "", "/x/config/ruvllm", "--models-dir"},
		{"all XDG directories", "/x/config", "/x/data", "/x/cache", "/x/config/ruvllm", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", tc.config)
			t.Setenv("XDG_DATA_HOME", tc.data)
			t.Setenv("XDG_CACHE_HOME", tc.cache)
			c, err := DefaultConfig()
			if err != nil {
				t.Fatalf("DefaultConfig: %v", err)
			}
			if c.StateDir != tc.wantState || c.SocketPath != "/run/test/ruvllm.sock" {
				t.Errorf("state dir %q, socket %q", c.StateDir, c.SocketPath)
			}
			err = c.CheckDirs()
			if tc.wantErrFlagName == "" {
				if err != nil || c.ModelsDir != filepath.Join(tc.data, "ruvllm", "models") || c.CacheDir != filepath.Join(tc.cache, "ruvllm") {
					t.Errorf("CheckDirs: %v; models %q, cache %q", err, c.ModelsDir, c.CacheDir)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErrFlagName) {
				t.Errorf("CheckDirs: %v, want an error naming %s", err, tc.wantErrFlagName)
			}
			// Given by flag, they do.
			c.StateDir, c.ModelsDir, c.AdaptersDir, c.CacheDir = "/s", "/m", "/a", "/c"
			if err := c.CheckDirs(); err != nil {
				t.Errorf("every directory given: %v", err)
			}
		})
	}
}
