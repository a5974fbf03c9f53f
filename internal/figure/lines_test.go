package figure

import (
	"bytes"
	"image/color"
	"image/png"
	"testing"

	"gonum.org/v1/plot/plotutil"
)

// hasColour reports whether any pixel of the PNG has exactly colour c.
func hasColour(t *testing.T, b []byte, c color.Color) bool {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	r0, g0, b0, _ := c.RGBA()
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r == r0 && g == g0 && bl == b0 {
				return true
			}
		}
	}
	return false
}

// Each series is drawn in the colour of its Style, whatever its position.
func TestLinesDrawsEachSeriesInItsStyle(t *testing.T) {
	b, err := Lines(Chart{Title: "t", XLabel: "epoch", YLabel: "top-1", Series: []Series{
		{Name: "SL", Style: 0, Points: []XY{{1, 50}, {2, 60}, {3, 65}}},
		{Name: "LCL", Style: 3, Points: []XY{{1, 55}, {2, 62}, {3, 70}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if s := img.Bounds().Size(); s.X != 7*dpi || s.Y != 9*dpi/2 {
		t.Errorf("size %v, want 7×4.5 in at %d dpi", s, dpi)
	}
	for _, style := range []int{0, 3} {
		if !hasColour(t, b, plotutil.Color(style)) {
			t.Errorf("no pixel in the colour of style %d", style)
		}
	}
	if hasColour(t, b, plotutil.Color(1)) {
		t.Error("a colour of a style no series has")
	}
}

func TestStackAndCDDiagram(t *testing.T) {
	red := color.RGBA{R: 214, G: 39, B: 40, A: 255}
	b, err := Stack([]Panel{{Title: "a", Points: []XY{{0, 1}, {1, 0.5}}, Color: color.RGBA{B: 200, A: 255}},
		{Title: "b", Points: []XY{{0, 0.2}, {1, 0.9}}, Color: red, YRange: &[2]float64{0, 1}}})
	if err != nil || !hasColour(t, b, red) {
		t.Fatalf("stack: %v", err)
	}
	b, err = CDDiagram(CD{Methods: []string{"SL", "LS", "LCL"}, AvgRanks: []float64{2.5, 2, 1.5}, K: 3, CD: 0.8,
		Cliques: func([]float64, float64) [][2]int { return [][2]int{{0, 2}} }, Note: "note"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// Bars draws each series in its Style's colour, and refuses a series of
// another length than the categories.
func TestBarsDrawsEachSeriesInItsStyle(t *testing.T) {
	c := BarChart{Title: "t", XLabel: "height", YLabel: "mistakes", Categories: []string{"1", "2", "3"}, Series: []BarSeries{
		{Name: "SL", Style: 0, Values: []float64{2, 4, 4}},
		{Name: "LS", Style: 2, Values: []float64{8, 4, 4}},
	}}
	b, err := Bars(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, style := range []int{0, 2} {
		if !hasColour(t, b, plotutil.Color(style)) {
			t.Errorf("no pixel in the colour of style %d", style)
		}
	}
	if hasColour(t, b, plotutil.Color(1)) {
		t.Error("a colour of a style no series has")
	}
	c.Series[1].Values = c.Series[1].Values[:2]
	if _, err := Bars(c); err == nil || err.Error() != `figure: series "LS" has 2 values for 3 categories` {
		t.Errorf("a short series: %v", err)
	}
}
