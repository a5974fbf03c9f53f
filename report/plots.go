package report

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/internal/figure"
)

// Plot is one rendered figure.
type Plot struct {
	Name  string // file name, e.g. curves-fashion-mnist-cnn-10.png
	Title string
	PNG   []byte
	// Caption is set where the image carries no title of its own.
	Caption bool
}

// AddPlots renders the report's figures: top-1 against DR per method (when
// there are several ratios), per-epoch test accuracy, the mean target
// entropy per epoch of the LCL runs (when logged), the trade-off of top-1
// error against mistake severity and hier. dist@5 (runs with a hierarchy),
// and the critical difference diagram of the rank test.
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
			p, ok, err := severityPlot(k.ds, k.model, f, sub, r.Severity)
			if err != nil {
				return err
			}
			if ok {
				r.Plots = append(r.Plots, p)
			}
			for _, m := range []Metric{Severity, HDist5} {
				p, ok, err := tradeoff(k.ds, k.model, f, sub, m)
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
		k := r.Ranks
		png, err := figure.CDDiagram(figure.CD{Methods: k.Methods, AvgRanks: k.AvgRanks, K: k.K, CD: k.CD, Cliques: Cliques,
			Note: fmt.Sprintf("Average ranks over %d blocks (%s); Iman–Davenport %s; thick bars join methods not significantly different (Nemenyi, α = %g).",
				k.N, k.Blocks, k.ffNote(), k.Alpha)})
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

func accuracyVsDR(ds, model string, es []Entry) (Plot, error) {
	c := figure.Chart{Title: fmt.Sprintf("%s, %s: top-1 vs data ratio (mean over seeds)", ds, model),
		XLabel: "data ratio DR (%)", YLabel: "test top-1 (%)"}
	cs := cells(es, Top1)
	for i, m := range methods(es) {
		var pts []figure.XY
		var fracs []float64
		for k := range cs {
			fracs = append(fracs, k.Fraction)
		}
		for _, f := range uniqueSorted(fracs) {
			if c := cs[settingKey{ds, model, f}][m]; c != nil {
				pts = append(pts, figure.XY{X: f * 100, Y: c.Mean})
			}
		}
		if len(pts) == 0 {
			continue
		}
		c.Series = append(c.Series, figure.Series{Name: m, Style: i, Points: pts})
	}
	png, err := figure.Lines(c)
	return Plot{Name: fileName("top1-vs-dr", ds, model), Title: c.Title, PNG: png}, err
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
	c := figure.Chart{Title: title, XLabel: "epoch", YLabel: ylabel, LegendTop: kind == curveEntropy}
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
		pts := make([]figure.XY, len(epochs))
		for j, ep := range epochs {
			pts[j] = figure.XY{X: float64(ep), Y: sum[ep] / float64(cnt[ep])}
		}
		c.Series = append(c.Series, figure.Series{Name: m, Style: i, Points: pts})
	}
	if len(c.Series) == 0 {
		return Plot{}, false, nil
	}
	png, err := figure.Lines(c)
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

// tradeoff plots each method's mean top-1 error against its mean metric m
// (lower-left is better), as Bertinetto et al.'s Figure 1 does; ok is false
// when no method of the setting has m.
func tradeoff(ds, model string, frac float64, es []Entry, m Metric) (Plot, bool, error) {
	c := figure.Chart{Title: fmt.Sprintf("%s, %s, DR %s: %s vs top-1 error (mean over seeds)", ds, model, experiment.Percent(frac), m.Short()),
		XLabel: "test top-1 error (%)", YLabel: m.Title(), Pad: 0.15, LegendTop: true}
	top1, other := cells(es, Top1), cells(es, m)
	k := settingKey{ds, model, frac}
	for i, meth := range methods(es) {
		a, b := top1[k][meth], other[k][meth]
		if a == nil || b == nil {
			continue
		}
		c.Series = append(c.Series, figure.Series{Name: meth, Style: i, Points: []figure.XY{{X: 100 - a.Mean, Y: b.Mean}}})
	}
	if len(c.Series) == 0 {
		return Plot{}, false, nil
	}
	png, err := figure.Lines(c)
	return Plot{Name: fileName("tradeoff", string(m), ds, model, experiment.Percent(frac)), Title: c.Title, PNG: png}, true, err
}
