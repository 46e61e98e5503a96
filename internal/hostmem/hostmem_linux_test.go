//go:build linux

package hostmem

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

const alignsHuge = true

// TestLargeBuffersInHugePages checks, where the kernel offers transparent
// huge pages on advice, that a touched 8 MiB buffer is backed by them
// (its mapping's AnonHugePages in /proc/self/smaps).
func TestLargeBuffersInHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Skipf("no transparent huge pages here: %v", err)
	}
	if !strings.Contains(string(mode), "[always]") && !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("transparent huge pages are off here (%s)", strings.TrimSpace(string(mode)))
	}
	b, err := Alloc(4 * HugePage)
	if err != nil {
		t.Fatal(err)
	}
	defer Free(b)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	kb, err := anonHugeKB(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	if err != nil {
		t.Fatal(err)
	}
	if kb == 0 {
		t.Errorf("8 MiB buffer: AnonHugePages 0 kB in /proc/self/smaps; want huge pages")
	}
}

// anonHugeKB reads the AnonHugePages figure of the mapping containing addr.
func anonHugeKB(addr uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		var kb int
		if in {
			if n, _ := fmt.Sscanf(line, "AnonHugePages: %d kB", &kb); n == 1 {
				return kb, nil
			}
		}
	}
	return 0, fmt.Errorf("no mapping at %#x in /proc/self/smaps", addr)
}
