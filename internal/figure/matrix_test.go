package figure

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

func distinctColours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

func TestHeatmapAndSpectrumArePNGs(t *testing.T) {

	data := []float64{
		1, 0.9, 0.1, 0.2,
		0.9, 1, 0.2, 0.1,
		0.1, 0.2, 1, 0.8,
		0.2, 0.1, 0.8, 1,
	}
	names := []string{"a", "b", "c", "d"}
	var buf bytes.Buffer
	if err := Heatmap(&buf, data, names, []int{0, 1, 2, 3}, "test"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("heatmap is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 800 {
		t.Errorf("heatmap is %v, want at least 800×800", b)
	}
	if n := distinctColours(img); n < 20 {
		t.Errorf("heatmap has %d colours: colour bar and cells missing?", n)
	}
	buf.Reset()
	if err := Spectrum(&buf, []float64{2.5, 1, 0.4, 0.1}, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatalf("spectrum is not a PNG: %v", err)
	}
	if err := Heatmap(&buf, data[:3], names, []int{0, 1, 2, 3}, "bad"); err == nil {
		t.Error("wrong data length accepted")
	}

}
