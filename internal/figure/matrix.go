package figure

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// MaxNamedTicks is the largest class count whose names label the axes; above
// it the axes show class positions.
const MaxNamedTicks = 60

// grid is a C×C matrix as a heatmap grid with row 0 at the top.
type grid struct {
	c        int
	z        func(r, col int) float64
	min, max float64
}

func (g grid) Dims() (int, int)     { return g.c, g.c }
func (g grid) Z(col, r int) float64 { return g.z(g.c-1-r, col) }
func (g grid) X(col int) float64    { return float64(col) }
func (g grid) Y(r int) float64      { return float64(r) }
func (g grid) Min() float64         { return g.min }
func (g grid) Max() float64         { return g.max }

// classTicks labels positions with class names (x: left to right, y: top to
// bottom) or, for many classes, with 1-based positions.
type classTicks struct {
	names []string
	flipY bool
}

func (t classTicks) Ticks(min, max float64) []plot.Tick {
	c := len(t.names)
	var out []plot.Tick
	if c <= MaxNamedTicks {
		for i, n := range t.names {
			v := float64(i)
			if t.flipY {
				v = float64(c - 1 - i)
			}
			out = append(out, plot.Tick{Value: v, Label: n})
		}
		return out
	}
	step := niceStep(c)
	for i := 0; i < c; i += step {
		v := float64(i)
		if t.flipY {
			v = float64(c - 1 - i)
		}
		out = append(out, plot.Tick{Value: v, Label: fmt.Sprint(i + 1)})
	}
	return out
}

func niceStep(c int) int {
	for _, s := range []int{10, 20, 50, 100, 200, 500, 1000} {
		if c/s <= 10 {
			return s
		}
	}
	return c / 10
}

// Heatmap writes a PNG of the dissimilarity 1−s of a row-major C×C matrix,
// rows and columns in the given order (e.g. similarity.ClusterOrder), with
// class names on the axes (up to MaxNamedTicks classes) and a colour bar.
func Heatmap(w io.Writer, data []float64, names []string, order []int, title string) error {
	c := len(names)
	if len(data) != c*c || len(order) != c {
		return fmt.Errorf("plot: %d values and %d order entries for %d classes", len(data), len(order), c)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			if i != j {
				d := 1 - data[i*c+j]
				lo, hi = math.Min(lo, d), math.Max(hi, d)
			}
		}
	}
	if c < 2 || lo == hi {
		lo, hi = 0, 1
	}
	lo = math.Min(lo, 0) // the diagonal is 0
	g := grid{c: c, min: lo, max: hi, z: func(r, col int) float64 { return 1 - data[order[r]*c+order[col]] }}
	cmap := moreland.ExtendedBlackBody()
	cmap.SetMin(lo)
	cmap.SetMax(hi)

	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "class (hierarchical clustering order, average linkage)"
	p.Y.Label.Text = "class"
	ordered := make([]string, c)
	for i, o := range order {
		ordered[i] = names[o]
	}
	p.X.Tick.Marker = classTicks{names: ordered}
	p.Y.Tick.Marker = classTicks{names: ordered, flipY: true}
	if c <= MaxNamedTicks {
		small := vg.Points(6)
		if c > 30 {
			small = vg.Points(5)
		}
		p.X.Tick.Label.Font.Size = small
		p.Y.Tick.Label.Font.Size = small
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	} else {
		p.X.Label.Text = "class position (hierarchical clustering order, average linkage)"
		p.Y.Label.Text = "class position"
	}
	hm := plotter.NewHeatMap(g, cmap.Palette(255))
	// Rectangles stay sharp; a raster image is smoothed when scaled, so it
	// is used only where rectangles would be too many.
	hm.Rasterized = c > 300
	p.Add(hm)
	p.X.Min, p.X.Max = -0.5, float64(c)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(c)-0.5

	bar := plot.New()
	cb := &plotter.ColorBar{ColorMap: cmap, Vertical: true}
	bar.Add(cb)
	bar.HideX()
	bar.Y.Padding = 0
	bar.Y.Label.Text = "dissimilarity 1 − s"
	bar.Title.Text = " "

	const width, height = 10 * vg.Inch, 9 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(150))
	dc := draw.New(img)
	barW := 1.1 * vg.Inch
	left := draw.Crop(dc, 0, -barW, 0, 0)
	right := draw.Crop(dc, width-barW, 0, 0, 0)
	// Align the bar with the map's vertical extent.
	right = draw.Crop(right, vg.Points(8), -vg.Points(8), bottomMargin(c), -0.25*vg.Inch)
	p.Draw(left)
	bar.Draw(right)
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// bottomMargin approximates the room the rotated x tick labels take, so the
// colour bar spans the map rather than the labels.
func bottomMargin(c int) vg.Length {
	if c <= MaxNamedTicks {
		return 1.0 * vg.Inch
	}
	return 0.55 * vg.Inch
}

// Spectrum writes a PNG of the eigenvalues (largest first) against their
// rank.
func Spectrum(w io.Writer, eig []float64, title string) error {
	if len(eig) == 0 {
		return fmt.Errorf("plot: no eigenvalues")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "rank of eigenvalue (largest first)"
	p.Y.Label.Text = "eigenvalue"
	pts := make(plotter.XYs, len(eig))
	for i, v := range eig {
		pts[i] = plotter.XY{X: float64(i + 1), Y: v}
	}
	line, scatter, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	scatter.Color = line.Color
	scatter.Radius = vg.Points(1.5)
	if len(eig) > 200 {
		scatter.Radius = vg.Points(0.6)
	}
	zero := plotter.NewFunction(func(float64) float64 { return 0 })
	zero.Color = color.Gray{Y: 150}
	zero.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(plotter.NewGrid(), zero, line, scatter)
	p.X.Min = 0
	p.X.Max = float64(len(eig) + 1)
	p.X.Tick.Marker = intTicks{}
	if low := eig[len(eig)-1]; low > 0 {
		p.Y.Min = 0 // show where zero is
	}
	img := vgimg.NewWith(vgimg.UseWH(7*vg.Inch, 4.5*vg.Inch), vgimg.UseDPI(150))
	p.Draw(draw.New(img))
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// intTicks puts integer labels on a count axis.
type intTicks struct{}

func (intTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Label != "" {
			t.Label = fmt.Sprintf("%.0f", t.Value)
		}
		out = append(out, t)
	}
	return out
}
