package figure

import (
	"fmt"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// BarSeries is one series of a Bars chart: a value per category. Style
// picks its colour, as a Series' does.
type BarSeries struct {
	Name   string
	Style  int
	Values []float64
}

// BarChart is a grouped bar chart: per category, one bar per series side
// by side.
type BarChart struct {
	Title, XLabel, YLabel string
	Categories            []string
	Series                []BarSeries
}

// Bars draws a grouped bar chart, 7×4.5 in at 96 dpi, with a legend at the
// top right, above the bars.
func Bars(c BarChart) ([]byte, error) {
	if len(c.Series) == 0 || len(c.Categories) == 0 {
		return nil, fmt.Errorf("figure: a bar chart of %d series over %d categories", len(c.Series), len(c.Categories))
	}
	p := newChart(c.Title, c.XLabel, c.YLabel)
	p.Legend.Top = true
	// The group of a category spans 80 % of the space between categories.
	step := vg.Points(300 / float64(len(c.Categories)))
	width := step * 0.8 / vg.Length(len(c.Series))
	for i, s := range c.Series {
		if len(s.Values) != len(c.Categories) {
			return nil, fmt.Errorf("figure: series %q has %d values for %d categories", s.Name, len(s.Values), len(c.Categories))
		}
		b, err := plotter.NewBarChart(plotter.Values(s.Values), width)
		if err != nil {
			return nil, err
		}
		b.Color = plotutil.Color(s.Style)
		b.LineStyle.Width = 0
		b.Offset = width * (vg.Length(i) - vg.Length(len(c.Series)-1)/2)
		p.Add(b)
		p.Legend.Add(s.Name, b)
	}
	p.NominalX(c.Categories...)
	// Room above the tallest bar for the legend, a line per series.
	top := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			top = max(top, v)
		}
	}
	p.Y.Min, p.Y.Max = 0, max(top, 1)*(1+0.1*float64(len(c.Series)+1))
	return render(p, 7*vg.Inch, 4.5*vg.Inch)
}
