package models

import (
	"testing"
	"testing/fstest"
)

// TestCgroupHeadroom: the memory check counts the daemon's memory cgroup
// limit (a container, a systemd MemoryMax): it read only /proc/meminfo, so
// a model that fit the machine but not the limit was loaded and the
// kernel killed the daemon instead of the load being refused.
func TestCgroupHeadroom(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name    string
		self    string
		files   fstest.MapFS
		left    int64
		limited bool
	}{
		{"v2 limit", "0::/user.slice/app.scope\n", fstest.MapFS{
			"user.slice/app.scope/memory.max":     {Data: []byte("4294967296\n")},
			"user.slice/app.scope/memory.current": {Data: []byte("3221225472\n")},
			"user.slice/app.scope/memory.stat":    {Data: []byte("anon 1\ninactive_file 1073741824\nactive_file 5\n")},
		}, 2 * gib, true},
		{"v2 no limit", "0::/user.slice\n", fstest.MapFS{
			"user.slice/memory.max":     {Data: []byte("max\n")},
			"user.slice/memory.current": {Data: []byte("1000\n")},
		}, 0, false},
		{"v2 in a container (own cgroup at the root)", "0::/docker/abc\n", fstest.MapFS{
			"memory.max":     {Data: []byte("2147483648")},
			"memory.current": {Data: []byte("536870912")},
		}, 1536 << 20, true},
		{"v1", "12:cpu,cpuacct:/\n4:memory:/process_api/x\n0::/\n", fstest.MapFS{
			"memory/process_api/x/memory.limit_in_bytes": {Data: []byte("8589934592\n")},
			"memory/process_api/x/memory.usage_in_bytes": {Data: []byte("9000000000\n")},
		}, 0, true},
		{"v1 unlimited", "4:memory:/\n", fstest.MapFS{
			"memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")},
			"memory/memory.usage_in_bytes": {Data: []byte("1\n")},
		}, 0, false},
		{"v2 limit on a parent slice", "0::/user.slice/app.scope\n", fstest.MapFS{
			"user.slice/memory.max":               {Data: []byte("1073741824")},
			"user.slice/memory.current":           {Data: []byte("805306368")},
			"user.slice/app.scope/memory.max":     {Data: []byte("max")},
			"user.slice/app.scope/memory.current": {Data: []byte("1")},
		}, 256 << 20, true},
		{"no files", "0::/x\n", fstest.MapFS{}, 0, false},
		{"garbage", "0::/x\n", fstest.MapFS{"x/memory.max": {Data: []byte("lots")}, "x/memory.current": {Data: []byte("-5")}}, 0, false},
	} {
		left, limited := cgroupHeadroom(c.files, []byte(c.self))
		if left != c.left || limited != c.limited {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, left, limited, c.left, c.limited)
		}
	}
}
