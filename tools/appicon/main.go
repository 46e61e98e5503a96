// Command appicon draws the ruvllm icon set with image/png and writes it
// where the build and the desktop-integration packages expect it:
//
//	build/appicon.png                  1024 px, the icon Wails bundles
//	build/icons/ruvllm-<n>.png         16…1024 px, Linux hicolor sizes
//	app/tray/icons/ruvllm-<n>.png      22…64 px, embedded StatusNotifierItem pixmaps
//	app/menubar/icons/template-36.png  macOS menu-bar template image (@2x of 18 pt)
//
// Run it from the repository root after changing the drawing:
//
//	go run ./tools/appicon
//
// With -check it writes nothing and exits non-zero if a committed file
// differs in pixels from what it would draw (the package test does the same).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
)

// output is one file of the icon set.
type output struct {
	Path  string // relative to the repository root
	Style Style
	Size  int
}

// outputs lists every file appicon owns.
func outputs() []output {
	outs := []output{{"build/appicon.png", Color, 1024}}
	for _, n := range []int{16, 32, 48, 64, 128, 256, 512, 1024} {
		outs = append(outs, output{fmt.Sprintf("build/icons/ruvllm-%d.png", n), Color, n})
	}
	for _, n := range []int{22, 32, 48, 64} {
		outs = append(outs, output{fmt.Sprintf("app/tray/icons/ruvllm-%d.png", n), Color, n})
	}
	outs = append(outs, output{"app/menubar/icons/template-36.png", Template, 36})
	return outs
}

func encode(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// check compares the committed file with a fresh rendering, pixel by pixel.
func check(root string, o output) error {
	f, err := os.Open(filepath.Join(root, o.Path))
	if err != nil {
		return err
	}
	defer f.Close()
	got, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("decode %s: %w", o.Path, err)
	}
	want := Render(o.Style, o.Size)
	if got.Bounds() != want.Bounds() {
		return fmt.Errorf("%s: size %v, want %v", o.Path, got.Bounds(), want.Bounds())
	}
	for y := 0; y < o.Size; y++ {
		for x := 0; x < o.Size; x++ {
			gr, gg, gb, ga := got.At(x, y).RGBA()
			wr, wg, wb, wa := want.At(x, y).RGBA()
			if gr != wr || gg != wg || gb != wb || ga != wa {
				return fmt.Errorf("%s: pixel (%d,%d) differs from the drawing; run go run ./tools/appicon", o.Path, x, y)
			}
		}
	}
	return nil
}

func main() {
	root := flag.String("root", ".", "repository root")
	checkOnly := flag.Bool("check", false, "compare committed icons with the drawing instead of writing them")
	flag.Parse()
	failed := false
	for _, o := range outputs() {
		if *checkOnly {
			if err := check(*root, o); err != nil {
				fmt.Fprintln(os.Stderr, "appicon:", err)
				failed = true
			}
			continue
		}
		data, err := encode(Render(o.Style, o.Size))
		if err != nil {
			fmt.Fprintf(os.Stderr, "appicon: encode %s: %v\n", o.Path, err)
			os.Exit(1)
		}
		p := filepath.Join(*root, o.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "appicon:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "appicon:", err)
			os.Exit(1)
		}
	}
	if failed {
		os.Exit(1)
	}
}
