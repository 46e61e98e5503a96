package tray

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"slices"
)

// icons holds the tray sizes of the ruvllm icon, drawn by tools/appicon.
//
//go:embed icons/*.png
var icons embed.FS

// pixmap is one SNI icon image, D-Bus signature (iiay): width, height and
// ARGB32 pixels in network byte order (A, R, G, B bytes), not premultiplied.
type pixmap struct {
	Width  int32
	Height int32
	Data   []byte
}

// pngPixmap decodes a PNG into an SNI pixmap.
func pngPixmap(data []byte) (pixmap, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return pixmap{}, fmt.Errorf("decode png: %w", err)
	}
	return toPixmap(img), nil
}

func toPixmap(img image.Image) pixmap {
	b := img.Bounds()
	nrgba, ok := img.(*image.NRGBA)
	if !ok {
		nrgba = image.NewNRGBA(b)
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				nrgba.Set(x, y, img.At(x, y))
			}
		}
	}
	pm := pixmap{Width: int32(b.Dx()), Height: int32(b.Dy()), Data: make([]byte, 0, 4*b.Dx()*b.Dy())}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := nrgba.NRGBAAt(x, y)
			pm.Data = append(pm.Data, c.A, c.R, c.G, c.B)
		}
	}
	return pm
}

// defaultPixmaps decodes every embedded icon size, smallest first, so that
// hosts can pick the one nearest their panel height.
func defaultPixmaps() ([]pixmap, error) {
	names, err := fs.Glob(icons, "icons/*.png")
	if err != nil {
		return nil, err
	}
	var pms []pixmap
	for _, name := range names {
		data, err := icons.ReadFile(name)
		if err != nil {
			return nil, err
		}
		pm, err := pngPixmap(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pms = append(pms, pm)
	}
	if len(pms) == 0 {
		return nil, fmt.Errorf("no icons embedded")
	}
	slices.SortFunc(pms, func(a, b pixmap) int { return cmp.Compare(a.Width, b.Width) })
	return pms, nil
}
