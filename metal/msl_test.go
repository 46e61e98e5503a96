package metal

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// There is no Metal compiler off macOS. These tests check kernels.metal as
// far as a host can: every kernel the backend asks for is defined, and the
// source parses and type-checks as C++17 against testdata/mslshim (a small
// stand-in for <metal_stdlib>) with the Metal qualifiers defined away.

// definedKernels returns the kernel function names kernels.metal defines:
// plain kernels, the MATMUL/GET_ROWS macro instances and the host names
// of template instantiations.
func definedKernels(t *testing.T) map[string]bool {
	t.Helper()
	src, err := os.ReadFile("kernels.metal")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	templates := map[string]bool{"NAME": true} // the macros' parameter
	for _, m := range regexp.MustCompile(`(?m)^template <typename \w+>\nkernel void (\w+)\(`).FindAllSubmatch(src, -1) {
		templates[string(m[1])] = true
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^kernel void (\w+)\(`),
		regexp.MustCompile(`(?m)^[A-Z_]+_KERNEL\((\w+),`),
		regexp.MustCompile(`(?m)^template \[\[host_name\("(\w+)"\)\]\] kernel`),
	} {
		for _, m := range re.FindAllSubmatch(src, -1) {
			if !templates[string(m[1])] {
				names[string(m[1])] = true
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("no kernels found in kernels.metal")
	}
	return names
}

func TestKernelNamesDefined(t *testing.T) {
	defined := definedKernels(t)
	want := map[string]bool{}
	for _, n := range kernelNames {
		want[n] = true
		if !defined[n] {
			t.Errorf("the backend builds a pipeline for %s, which kernels.metal does not define", n)
		}
	}
	for n := range defined {
		if !want[n] {
			t.Errorf("kernels.metal defines %s, which the backend never loads", n)
		}
	}
	for typ, suffix := range kernelSuffix {
		for _, k := range []string{"matmul_" + suffix, "get_rows_" + suffix} {
			if !want[k] {
				t.Errorf("%s weights map to %s, which is not in kernelNames", typ, k)
			}
		}
	}
}

func TestKernelsParseAsCXX(t *testing.T) {
	var cxx string
	for _, c := range []string{"clang++", "g++", "c++"} {
		if p, err := exec.LookPath(c); err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		t.Skip("no C++ compiler (apt-get install g++): kernels.metal not syntax-checked")
	}
	cmd := exec.Command(cxx, "-fsyntax-only", "-std=c++17", "-Wall", "-Wno-attributes", "-Wno-unknown-attributes",
		"-Werror", "-Itestdata/mslshim", "-include", "metal_stdlib", "-x", "c++", "kernels.metal")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s rejects kernels.metal: %v\n%s", cxx, err, strings.TrimSpace(string(out)))
	}
}
