package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Target is the platform to check for.
type Target struct{ GOOS, GOARCH string }

// Result is what Check found.
type Result struct {
	// Packages is how many packages matched the patterns.
	Packages int
	// Errors are the type and list errors of the matched packages, as
	// "file:line:col: message" strings, sorted.
	Errors []string
}

// Check lists patterns (relative to dir; "" is the working directory) for
// the target with cgo enabled, then type-checks the matched packages and
// all their dependencies from source in dependency order. Dependencies are
// checked without function bodies and their errors are not reported.
//
// Listing does not ask go for compiled files, so no C compiler for the
// target is needed; C.* references are accepted via FakeImportC.
func Check(t Target, dir string, patterns []string) (Result, error) {
	env := append(os.Environ(), "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "CGO_ENABLED=1")
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps | packages.NeedModule,
		Dir:  dir,
		Env:  env,
	}
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		return Result{}, fmt.Errorf("list packages: %w", err)
	}
	if len(roots) == 0 {
		return Result{}, errors.New("no packages matched")
	}
	sizes := types.SizesFor("gc", t.GOARCH)
	if sizes == nil {
		return Result{}, fmt.Errorf("unknown GOARCH %q", t.GOARCH)
	}
	c := &checker{
		fset:    token.NewFileSet(),
		sizes:   sizes,
		done:    map[string]*types.Package{},
		targets: map[*packages.Package]bool{},
	}
	var res Result
	for _, p := range roots {
		c.targets[p] = true
	}
	res.Packages = len(roots)
	for _, p := range roots {
		for _, e := range p.Errors {
			c.errs = append(c.errs, e.Error())
		}
		c.check(p)
	}
	slices.Sort(c.errs)
	res.Errors = slices.Compact(c.errs)
	return res, nil
}

type checker struct {
	fset    *token.FileSet
	sizes   types.Sizes
	done    map[string]*types.Package // by package path
	targets map[*packages.Package]bool
	errs    []string
}

// check type-checks p after its imports and returns its package.
func (c *checker) check(p *packages.Package) *types.Package {
	if p.PkgPath == "unsafe" {
		return types.Unsafe
	}
	if tp, ok := c.done[p.PkgPath]; ok {
		return tp
	}
	// Mark before recursing so an import cycle (itself a list error) ends.
	tp := types.NewPackage(p.PkgPath, p.Name)
	c.done[p.PkgPath] = tp
	for _, imp := range p.Imports {
		c.check(imp)
	}
	target := c.targets[p]
	var files []*ast.File
	mode := parser.SkipObjectResolution
	if target {
		mode |= parser.ParseComments
	}
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(c.fset, name, nil, mode)
		if err != nil {
			if target {
				c.errs = append(c.errs, err.Error())
			}
			continue
		}
		files = append(files, f)
	}
	conf := &types.Config{
		FakeImportC:      true,
		IgnoreFuncBodies: !target,
		Sizes:            c.sizes,
		Importer:         importerFunc(func(path string) (*types.Package, error) { return c.importPath(p, path) }),
		Error: func(err error) {
			if target {
				c.errs = append(c.errs, err.Error())
			}
		},
	}
	if p.Module != nil && p.Module.GoVersion != "" {
		conf.GoVersion = "go" + p.Module.GoVersion
	}
	_ = types.NewChecker(conf, c.fset, tp, nil).Files(files)
	tp.MarkComplete()
	return tp
}

// importPath resolves an import of from (which may be vendored or mapped).
func (c *checker) importPath(from *packages.Package, path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	imp, ok := from.Imports[path]
	if !ok {
		return nil, fmt.Errorf("%s: import %q not found in package list", from.PkgPath, path)
	}
	return c.check(imp), nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// relative strips dir from error positions for stable output in tests.
func relative(errs []string, dir string) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = strings.TrimPrefix(strings.ReplaceAll(e, dir+string(os.PathSeparator), ""), dir)
	}
	return out
}
