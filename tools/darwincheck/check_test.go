package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "cgomod"))
	if err != nil {
		t.Fatal(err)
	}
	darwin := Target{GOOS: "darwin", GOARCH: "arm64"}
	tests := []struct {
		name     string
		target   Target
		patterns []string
		want     []string // substrings, one per expected error, in order
	}{
		{"good", darwin, []string{"./good"}, nil},
		{"bad", darwin, []string{"./bad"}, []string{
			"bad/bad_darwin.go:14:17: cannot use n (variable of type int) as string value in variable declaration",
			"bad/bad_darwin.go:17:9: cannot use \"not a pointer\" (untyped string constant) as unsafe.Pointer value in return statement",
		}},
		{"linux sees the linux file", Target{GOOS: "linux", GOARCH: "amd64"}, []string{"./good"}, []string{
			`good/good_linux.go:4:18: cannot use "linux only" (untyped string constant) as int value in variable declaration`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Check(tc.target, dir, tc.patterns)
			if err != nil {
				t.Fatal(err)
			}
			got := relative(res.Errors, dir)
			if len(got) != len(tc.want) {
				t.Fatalf("errors:\n%s\nwant %d", strings.Join(got, "\n"), len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], w)
				}
			}
		})
	}
}
