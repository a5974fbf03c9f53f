package figure

import (
	"bytes"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// XY is one point of a series.
type XY struct{ X, Y float64 }

// Series is one line of a Chart. Style picks its colour, dashes and point
// shape, so that a method keeps its look across the charts of a report
// even where some charts leave it out.
type Series struct {
	Name   string
	Style  int
	Points []XY
}

// Chart is a line chart of several series with a legend.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// LegendTop puts the legend at the top right (else bottom right).
	LegendTop bool
	// Pad widens both axes by this share of the data's range on each
	// side (a scatter of single points would otherwise sit on the frame).
	Pad float64
}

// dpi of the report's charts and diagrams.
const dpi = 96

// sans is the report's typeface.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Lines draws a chart, 7×4.5 in at 96 dpi, in sans-serif type.
func Lines(c Chart) ([]byte, error) {
	p := newChart(c.Title, c.XLabel, c.YLabel)
	p.Legend.Top = c.LegendTop
	for _, s := range c.Series {
		xys := make(plotter.XYs, len(s.Points))
		for i, pt := range s.Points {
			xys[i] = plotter.XY{X: pt.X, Y: pt.Y}
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(s.Style)
		l.Dashes = plotutil.Dashes(s.Style / 7)
		l.Width = vg.Points(1.5)
		pts.Color = plotutil.Color(s.Style)
		pts.Shape = plotutil.Shape(s.Style)
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
	}
	if c.Pad > 0 {
		for _, ax := range []*plot.Axis{&p.X, &p.Y} {
			d := (ax.Max - ax.Min) * c.Pad
			if d == 0 {
				d = math.Max(math.Abs(ax.Max)*c.Pad, c.Pad)
			}
			ax.Min, ax.Max = ax.Min-d, ax.Max+d
		}
	}
	return render(p, 7*vg.Inch, 4.5*vg.Inch)
}

func newChart(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	p.Legend.Left = false
	// Sans-serif text throughout, set per plot (plot.DefaultFont is global state).
	for _, ts := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		ts.Font.Typeface, ts.Font.Variant = sans.Typeface, sans.Variant
	}
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	return p
}

func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	// A margin keeps the last tick label and the title off the image border.
	dc := draw.Crop(draw.New(img), vg.Points(4), -vg.Points(16), vg.Points(4), -vg.Points(6))
	p.Draw(dc)
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
