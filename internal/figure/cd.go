package figure

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// CD is a critical difference diagram's content.
type CD struct {
	Methods  []string  // in any order
	AvgRanks []float64 // each method's average rank (1 = best)
	K        int       // methods compared: the axis runs from 1 to K
	CD       float64   // the critical difference
	// Cliques groups the methods sorted by rank into index ranges not
	// significantly different.
	Cliques func(sortedRanks []float64, cd float64) [][2]int
	// Note is the footnote.
	Note string
}

// CDDiagram draws the critical difference diagram: an axis of average
// ranks (1, the best, on the left), each method connected to its rank, the
// CD as a bar, and thick lines joining groups not significantly different.
func CDDiagram(k CD) ([]byte, error) {
	type mr struct {
		name string
		rank float64
	}
	ms := make([]mr, len(k.Methods))
	for i, m := range k.Methods {
		ms[i] = mr{m, k.AvgRanks[i]}
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].rank < ms[j].rank })
	nLeft := (len(ms) + 1) / 2
	rows := max(nLeft, len(ms)-nLeft)

	const w = 8 * vg.Inch
	h := vg.Length(1.5+0.3*float64(rows)) * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	c := draw.New(img)

	fnt := font.From(sans, 11)
	sty := draw.TextStyle{Color: color.Black, Font: fnt, Handler: text.Plain{Fonts: font.DefaultCache}}
	small := sty
	small.Font = font.From(sty.Font, 9)
	thin := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	thick := draw.LineStyle{Color: color.Black, Width: vg.Points(3.5)}

	margin := 2.4 * vg.Inch // room for names
	x0, x1 := c.Min.X+margin, c.Max.X-margin
	lo, hi := 1.0, math.Max(2, float64(k.K))
	xOf := func(rank float64) vg.Length { return x0 + vg.Length((rank-lo)/(hi-lo))*(x1-x0) }
	axisY := c.Max.Y - 0.75*vg.Inch

	// Axis with integer ticks.
	c.StrokeLine2(thin, x0, axisY, x1, axisY)
	top := sty
	top.XAlign = draw.XCenter
	top.YAlign = draw.YBottom
	for r := 1; r <= int(hi); r++ {
		x := xOf(float64(r))
		c.StrokeLine2(thin, x, axisY, x, axisY+vg.Points(5))
		c.FillText(top, vg.Point{X: x, Y: axisY + vg.Points(7)}, fmt.Sprint(r))
	}
	// CD bar above the axis, starting at rank 1.
	cdY := axisY + vg.Points(30)
	c.StrokeLine2(thin, xOf(1), cdY, xOf(1+k.CD), cdY)
	c.StrokeLine2(thin, xOf(1), cdY-vg.Points(3), xOf(1), cdY+vg.Points(3))
	c.StrokeLine2(thin, xOf(1+k.CD), cdY-vg.Points(3), xOf(1+k.CD), cdY+vg.Points(3))
	c.FillText(top, vg.Point{X: xOf(1 + k.CD/2), Y: cdY + vg.Points(4)}, fmt.Sprintf("CD = %.2f", k.CD))

	// Methods: the better half to the left, the rest to the right.
	step := vg.Points(21)
	firstY := axisY - vg.Points(38)
	for i, m := range ms {
		x := xOf(m.rank)
		label := fmt.Sprintf("%s (%.2f)", m.name, m.rank)
		if i < nLeft {
			y := firstY - vg.Length(i)*step
			c.StrokeLines(thin, []vg.Point{{X: x, Y: axisY}, {X: x, Y: y}, {X: x0 - vg.Points(10), Y: y}})
			st := sty
			st.XAlign = draw.XRight
			st.YAlign = draw.YCenter
			c.FillText(st, vg.Point{X: x0 - vg.Points(14), Y: y}, label)
		} else {
			y := firstY - vg.Length(len(ms)-1-i)*step
			c.StrokeLines(thin, []vg.Point{{X: x, Y: axisY}, {X: x, Y: y}, {X: x1 + vg.Points(10), Y: y}})
			st := sty
			st.XAlign = draw.XLeft
			st.YAlign = draw.YCenter
			c.FillText(st, vg.Point{X: x1 + vg.Points(14), Y: y}, label)
		}
	}
	// Groups whose ranks lie within CD.
	ranks := make([]float64, len(ms))
	for i, m := range ms {
		ranks[i] = m.rank
	}
	for g, cl := range k.Cliques(ranks, k.CD) {
		y := axisY - vg.Points(12) - vg.Length(g)*vg.Points(7)
		c.StrokeLine2(thick, xOf(ranks[cl[0]])-vg.Points(3), y, xOf(ranks[cl[1]])+vg.Points(3), y)
	}
	note := small
	note.XAlign = draw.XLeft
	note.YAlign = draw.YBottom
	c.FillText(note, vg.Point{X: c.Min.X + vg.Points(6), Y: c.Min.Y + vg.Points(4)}, k.Note)

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
