package models

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveDeletesSnapshots: deleting a model removes its prefix-cache
// snapshots, of every layout and adapter set, and no other model's; they
// stayed in the cache dir for ever (up to the snapshot budget of keys and
// values per layout, gigabytes for a large model).
func TestRemoveDeletesSnapshots(t *testing.T) {
	cache := t.TempDir()
	m, _, _ := newTestManager(t, Options{CacheDir: cache}, "a.gguf", "a.5.gguf", "b.gguf")
	files := map[string]bool{ // name: a's
		"prefix-a.snap":                                  true,
		"prefix-a.0123abcd.snap":                         true,
		"prefix-a.ffffffff.snap":                         true,
		"prefix-a.0123abcd.lora-0123456789abcdef.snap":   true,
		"prefix-a.5.0123abcd.snap":                       false,
		"prefix-a.5.0123abcd.lora-0123456789abcdef.snap": false,
		"prefix-b.0123abcd.snap":                         false,
		"prefix-a.0123abcd.lora-0123456789abcdef.snap.x": false,
		"prefix-a.0123abcd.lora-0123.snap":               false,
		"ruvllmd.log":                                    false,
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(cache, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Remove("a"); err != nil {
		t.Fatal(err)
	}
	for name, deleted := range files {
		_, err := os.Stat(filepath.Join(cache, name))
		if gone := os.IsNotExist(err); gone != deleted {
			t.Errorf("%s: removed %v, want %v (%v)", name, gone, deleted, err)
		}
	}
	left, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(left, func(d os.DirEntry) bool { return isSnapshotOf(d.Name(), "a") }); i >= 0 {
		t.Errorf("a snapshot of a is left: %s", left[i].Name())
	}
}

func TestIsSnapshotOf(t *testing.T) {
	for _, tc := range []struct {
		file, key string
		want      bool
	}{
		{"prefix-llama.snap", "llama", true},
		{"prefix-llama.fa505118.snap", "llama", true},
		{"prefix-llama.fa505118.lora-0b14f56bc6c7a4cd.snap", "llama", true},
		{"prefix-llama.fa505118.lora-0b14f56bc6c7a4cd.snap", "llam", false},
		{"prefix-qwen2.5.fa505118.snap", "qwen2", false},
		{"prefix-llama.FA505118.snap", "llama", false},
		{"prefix-llama.fa50511.snap", "llama", false},
		{"prefix-llama.fa505118.lora-.snap", "llama", false},
		{"prefix-llama.fa505118", "llama", false},
		{".prefix-123", "llama", false},
	} {
		if got := isSnapshotOf(tc.file, tc.key); got != tc.want {
			t.Errorf("isSnapshotOf(%q, %q) = %v, want %v", tc.file, tc.key, got, tc.want)
		}
	}
}
