package main

import (
	"image/color"
	"testing"
)

// TestCommittedIconsMatchDrawing fails when a committed icon was edited by
// hand or the drawing changed without regenerating the files.
func TestCommittedIconsMatchDrawing(t *testing.T) {
	for _, o := range outputs() {
		if o.Size > 256 {
			continue // the large ones take longest to draw; same code path
		}
		if err := check("../..", o); err != nil {
			t.Error(err)
		}
	}
}

func TestRenderShape(t *testing.T) {
	tests := []struct {
		name  string
		style Style
		x, y  float64 // unit coordinates
		want  color.NRGBA
	}{
		{"corner is transparent", Color, 0.01, 0.01, color.NRGBA{}},
		{"bubble is white", Color, 0.5, 0.32, color.NRGBA{255, 255, 255, 255}},
		{"middle dot shows the background", Color, 0.5, 0.45, color.NRGBA{0x6e, 0x52, 0xef, 255}},
		{"template bubble is black", Template, 0.5, 0.3, color.NRGBA{0, 0, 0, 255}},
		{"template outside is transparent", Template, 0.02, 0.5, color.NRGBA{}},
	}
	const size = 256
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := Render(tt.style, size)
			got := img.NRGBAAt(int(tt.x*size), int(tt.y*size))
			if got != tt.want {
				t.Errorf("pixel at (%v,%v) = %v, want %v", tt.x, tt.y, got, tt.want)
			}
		})
	}
}
