package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/lcl-project/lcl/experiment"
)

// Plot is one rendered figure.
type Plot struct {
	Name  string // file name, e.g. curves-fashion-mnist-cnn-10.png
	Title string
	PNG   []byte
	// Caption is set where the image carries no title of its own.
	Caption bool
}

const plotDPI = 96

// AddPlots renders the report's figures: top-1 against DR per method (when
// there are several ratios), per-epoch test accuracy, the mean target
// entropy per epoch of the LCL runs (when logged), and the critical
// difference diagram of the rank test.
func (r *Report) AddPlots() error {
	type mkey struct{ ds, model string }
	byModel := map[mkey][]Entry{}
	for _, e := range r.entries {
		k := mkey{e.Dataset, e.Model}
		byModel[k] = append(byModel[k], e)
	}
	keys := make([]mkey, 0, len(byModel))
	for k := range byModel {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].ds != keys[j].ds {
			return keys[i].ds < keys[j].ds
		}
		return keys[i].model < keys[j].model
	})
	for _, k := range keys {
		es := byModel[k]
		var fracs []float64
		for _, e := range es {
			fracs = append(fracs, e.Fraction)
		}
		fracs = uniqueSorted(fracs)
		if len(fracs) > 1 {
			p, err := accuracyVsDR(k.ds, k.model, es)
			if err != nil {
				return err
			}
			r.Plots = append(r.Plots, p)
		}
		for _, f := range fracs {
			var sub []Entry
			for _, e := range es {
				if e.Fraction == f {
					sub = append(sub, e)
				}
			}
			for _, kind := range []curveKind{curveTop1, curveEntropy} {
				p, ok, err := curves(k.ds, k.model, f, sub, kind)
				if err != nil {
					return err
				}
				if ok {
					r.Plots = append(r.Plots, p)
				}
			}
		}
	}
	if r.Ranks != nil {
		png, err := cdDiagram(r.Ranks)
		if err != nil {
			return err
		}
		r.Plots = append(r.Plots, Plot{Name: "cd-diagram.png",
			Title: fmt.Sprintf("Critical difference diagram (Nemenyi, α = %g, CD = %.2f)", r.Ranks.Alpha, r.Ranks.CD), PNG: png, Caption: true})
	}
	return nil
}

var fileUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func fileName(parts ...string) string {
	for i, p := range parts {
		parts[i] = strings.Trim(fileUnsafe.ReplaceAllString(p, "_"), "_")
	}
	return strings.Join(parts, "-") + ".png"
}

func newPlot(title, x, y string) *plot.Plot {
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

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	// A margin keeps the last tick label and the title off the image border.
	dc := draw.Crop(draw.New(img), vg.Points(4), -vg.Points(16), vg.Points(4), -vg.Points(6))
	p.Draw(dc)
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// addLine adds a line with points in method i's colour and dashes.
func addLine(p *plot.Plot, i int, name string, xys plotter.XYs) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i / 7)
	l.Width = vg.Points(1.5)
	pts.Color = plotutil.Color(i)
	pts.Shape = plotutil.Shape(i)
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

func accuracyVsDR(ds, model string, es []Entry) (Plot, error) {
	p := newPlot(fmt.Sprintf("%s, %s: top-1 vs data ratio (mean over seeds)", ds, model), "data ratio DR (%)", "test top-1 (%)")
	p.Legend.Left = false
	p.Legend.Top = false
	cs := cells(es, Top1)
	for i, m := range methods(es) {
		var xys plotter.XYs
		var fracs []float64
		for k := range cs {
			fracs = append(fracs, k.Fraction)
		}
		for _, f := range uniqueSorted(fracs) {
			if c := cs[settingKey{ds, model, f}][m]; c != nil {
				xys = append(xys, plotter.XY{X: f * 100, Y: c.Mean})
			}
		}
		if len(xys) == 0 {
			continue
		}
		if err := addLine(p, i, m, xys); err != nil {
			return Plot{}, err
		}
	}
	png, err := render(p, 7*vg.Inch, 4.5*vg.Inch)
	return Plot{Name: fileName("top1-vs-dr", ds, model), Title: p.Title.Text, PNG: png}, err
}

type curveKind int

const (
	curveTop1 curveKind = iota
	curveEntropy
)

// curves plots the per-epoch mean over seeds of each method; for entropy
// only methods that logged it (LCL) appear. ok is false when nothing was logged.
func curves(ds, model string, frac float64, es []Entry, kind curveKind) (Plot, bool, error) {
	title := fmt.Sprintf("%s, %s, DR %s: test top-1 per epoch (mean over seeds)", ds, model, experiment.Percent(frac))
	ylabel := "test top-1 (%)"
	prefix := "curves"
	if kind == curveEntropy {
		title = fmt.Sprintf("%s, %s, DR %s: mean target entropy per epoch", ds, model, experiment.Percent(frac))
		ylabel = "target entropy (nats)"
		prefix = "entropy"
	}
	p := newPlot(title, "epoch", ylabel)
	p.Legend.Top = kind == curveEntropy
	any := false
	for i, m := range methods(es) {
		sum := map[int]float64{}
		cnt := map[int]int{}
		for _, e := range es {
			if e.Method != m {
				continue
			}
			for _, pt := range e.Curve {
				v := pt.Top1
				if kind == curveEntropy {
					v = pt.Entropy
				}
				if !math.IsNaN(v) {
					sum[pt.Epoch] += v
					cnt[pt.Epoch]++
				}
			}
		}
		if len(sum) == 0 {
			continue
		}
		epochs := make([]int, 0, len(sum))
		for ep := range sum {
			epochs = append(epochs, ep)
		}
		sort.Ints(epochs)
		xys := make(plotter.XYs, len(epochs))
		for j, ep := range epochs {
			xys[j] = plotter.XY{X: float64(ep), Y: sum[ep] / float64(cnt[ep])}
		}
		if err := addLine(p, i, m, xys); err != nil {
			return Plot{}, false, err
		}
		any = true
	}
	if !any {
		return Plot{}, false, nil
	}
	png, err := render(p, 7*vg.Inch, 4.5*vg.Inch)
	return Plot{Name: fileName(prefix, ds, model, experiment.Percent(frac)), Title: title, PNG: png}, true, err
}

// Cliques returns the maximal groups (as index ranges into the methods
// sorted by average rank) whose ranks lie within the critical difference:
// the methods of a group are not significantly different (Demšar 2006, Fig. 1).
func Cliques(sortedRanks []float64, cd float64) [][2]int {
	var out [][2]int
	lastEnd := -1
	for i := range sortedRanks {
		j := i
		for j+1 < len(sortedRanks) && sortedRanks[j+1]-sortedRanks[i] <= cd {
			j++
		}
		if j > i && j > lastEnd {
			out = append(out, [2]int{i, j})
			lastEnd = j
		}
	}
	return out
}

// cdDiagram draws the critical difference diagram: an axis of average
// ranks (1, the best, on the left), each method connected to its rank, the
// CD as a bar, and thick lines joining groups not significantly different.
func cdDiagram(k *RankTest) ([]byte, error) {
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
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
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
	for g, cl := range Cliques(ranks, k.CD) {
		y := axisY - vg.Points(12) - vg.Length(g)*vg.Points(7)
		c.StrokeLine2(thick, xOf(ranks[cl[0]])-vg.Points(3), y, xOf(ranks[cl[1]])+vg.Points(3), y)
	}
	note := small
	note.XAlign = draw.XLeft
	note.YAlign = draw.YBottom
	c.FillText(note, vg.Point{X: c.Min.X + vg.Points(6), Y: c.Min.Y + vg.Points(4)},
		fmt.Sprintf("Average ranks over %d blocks (%s); Iman–Davenport %s; thick bars join methods not significantly different (Nemenyi, α = %g).",
			k.N, k.Blocks, pIs(k.FFP), k.Alpha))

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
