package figure

import (
	"bytes"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Panel is one line of points in a panel of Stack.
type Panel struct {
	Title, XLabel, YLabel string
	Points                []XY
	Color                 color.Color
	// YRange fixes the y axis when set (e.g. [0, 1] for a probability).
	YRange *[2]float64
}

// Stack draws panels one above the other, 640×640 pt, on a shared column;
// each panel marks its points when there are at most 60.
func Stack(panels []Panel) ([]byte, error) {
	var plots [][]*plot.Plot
	for _, pn := range panels {
		xy := make(plotter.XYs, len(pn.Points))
		for i, pt := range pn.Points {
			xy[i] = plotter.XY{X: pt.X, Y: pt.Y}
		}
		p := plot.New()
		p.Title.Text = pn.Title
		p.X.Label.Text = pn.XLabel
		p.Y.Label.Text = pn.YLabel
		p.Add(plotter.NewGrid())
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = pn.Color
		l.Width = vg.Points(1.5)
		p.Add(l)
		if len(xy) <= 60 {
			s, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, err
			}
			s.Color = pn.Color
			s.Radius = vg.Points(2)
			p.Add(s)
		}
		if pn.YRange != nil {
			p.Y.Min, p.Y.Max = pn.YRange[0], pn.YRange[1]
		}
		plots = append(plots, []*plot.Plot{p})
	}
	img := vgimg.New(vg.Points(640), vg.Points(640))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Points(8), PadY: vg.Points(8), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
