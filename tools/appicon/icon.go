package main

import (
	"image"
	"image/color"
	"math"
)

// Style selects which variant of the ruvllm mark to draw.
type Style int

const (
	// Color is the application icon: a white speech bubble with three dots
	// on a rounded indigo-to-violet square.
	Color Style = iota
	// Template is the macOS menu-bar variant: the bubble alone in black on
	// transparency (AppKit recolours template images for light and dark bars).
	Template
)

type vec struct{ x, y float64 }

func (a vec) sub(b vec) vec { return vec{a.x - b.x, a.y - b.y} }

// roundedBox is the signed distance from p to a rectangle centred at c with
// half-extents h and corner radius r (negative inside).
func roundedBox(p, c, h vec, r float64) float64 {
	q := p.sub(c)
	qx := math.Abs(q.x) - h.x + r
	qy := math.Abs(q.y) - h.y + r
	out := math.Hypot(math.Max(qx, 0), math.Max(qy, 0))
	in := math.Min(math.Max(qx, qy), 0)
	return out + in - r
}

func inCircle(p, c vec, r float64) bool {
	d := p.sub(c)
	return d.x*d.x+d.y*d.y <= r*r
}

func inTriangle(p, a, b, c vec) bool {
	edge := func(u, v vec) float64 { return (v.x-u.x)*(p.y-u.y) - (v.y-u.y)*(p.x-u.x) }
	d1, d2, d3 := edge(a, b), edge(b, c), edge(c, a)
	neg := d1 < 0 || d2 < 0 || d3 < 0
	pos := d1 > 0 || d2 > 0 || d3 > 0
	return !(neg && pos)
}

// inGlyph reports whether p (unit square, y down) lies on the bubble, its
// dots excluded.
func inGlyph(p vec) bool {
	bubble := roundedBox(p, vec{0.5, 0.45}, vec{0.29, 0.2}, 0.1) <= 0 ||
		inTriangle(p, vec{0.31, 0.6}, vec{0.47, 0.6}, vec{0.29, 0.78})
	if !bubble {
		return false
	}
	for _, x := range []float64{0.38, 0.5, 0.62} {
		if inCircle(p, vec{x, 0.45}, 0.045) {
			return false
		}
	}
	return true
}

var (
	white  = [3]float64{1, 1, 1}
	top    = [3]float64{0x63 / 255.0, 0x66 / 255.0, 0xf1 / 255.0} // indigo
	bottom = [3]float64{0x7c / 255.0, 0x3a / 255.0, 0xed / 255.0} // violet
)

// sample returns the straight colour and coverage (0 or 1) of one sample.
func sample(style Style, p vec) ([3]float64, float64) {
	if style == Template {
		// Enlarge the glyph about its centre so it fills the menu-bar slot.
		const k = 1.4
		q := vec{0.5 + (p.x-0.5)/k, 0.5 + (p.y-0.52)/k}
		if inGlyph(q) {
			return [3]float64{0, 0, 0}, 1
		}
		return [3]float64{}, 0
	}
	if roundedBox(p, vec{0.5, 0.5}, vec{0.44, 0.44}, 0.2) > 0 {
		return [3]float64{}, 0
	}
	if inGlyph(p) {
		return white, 1
	}
	t := math.Min(math.Max((p.y-0.06)/0.88, 0), 1)
	var c [3]float64
	for i := range c {
		c[i] = top[i]*(1-t) + bottom[i]*t
	}
	return c, 1
}

// Render draws the mark at size×size pixels, anti-aliased by supersampling.
// Output depends only on style and size, so committed PNGs can be checked
// against it.
func Render(style Style, size int) *image.NRGBA {
	n := 4 // samples per axis
	if size <= 64 {
		n = 8
	}
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			var sum [3]float64 // premultiplied
			var cov float64
			for sy := 0; sy < n; sy++ {
				for sx := 0; sx < n; sx++ {
					p := vec{
						(float64(x) + (float64(sx)+0.5)/float64(n)) / float64(size),
						(float64(y) + (float64(sy)+0.5)/float64(n)) / float64(size),
					}
					c, a := sample(style, p)
					for i := range sum {
						sum[i] += c[i] * a
					}
					cov += a
				}
			}
			if cov == 0 {
				continue
			}
			total := float64(n * n)
			img.SetNRGBA(x, y, color.NRGBA{
				R: uint8(math.Round(sum[0] / cov * 255)),
				G: uint8(math.Round(sum[1] / cov * 255)),
				B: uint8(math.Round(sum[2] / cov * 255)),
				A: uint8(math.Round(cov / total * 255)),
			})
		}
	}
	return img
}
