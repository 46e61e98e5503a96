// Command darwincheck type-checks Go packages as they would build for
// darwin/arm64 with cgo on, from a Linux machine without a darwin C
// toolchain: build constraints are evaluated for darwin, cgo files are
// included, and references to C.* are accepted unchecked
// (go/types FakeImportC). It prints every type error of the named packages
// and exits non-zero if there is any.
//
//	go run ./tools/darwincheck ./metal/... ./coreml/... ./app/...
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	goos := flag.String("goos", "darwin", "target GOOS")
	goarch := flag.String("goarch", "arm64", "target GOARCH")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: darwincheck [-goos darwin] [-goarch arm64] packages...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	res, err := Check(Target{GOOS: *goos, GOARCH: *goarch}, "", flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "darwincheck:", err)
		os.Exit(2)
	}
	for _, e := range res.Errors {
		fmt.Println(e)
	}
	fmt.Fprintf(os.Stderr, "darwincheck: %d packages checked for %s/%s, %d errors\n", res.Packages, *goos, *goarch, len(res.Errors))
	if len(res.Errors) > 0 {
		os.Exit(1)
	}
}
