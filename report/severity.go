package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/internal/figure"
)

// SeverityRow is one method's top-1 mistakes in one setting: means over
// the seeds whose runs counted them.
type SeverityRow struct {
	Method   string
	N        int     // seeds
	Top1     float64 // %
	Mistakes float64 // test examples the top-1 prediction gets wrong
	// Severity is the mean of the runs' mistake severities (as the
	// Severity table's cell).
	Severity float64
	// ByHeight[h] is the mean number of mistakes whose true and predicted
	// classes meet at LCA height h.
	ByHeight []float64
}

// SeverityTable is the distribution of the mistakes by LCA height of the
// methods in one setting (data set × model × DR). Counts, not only their
// shares: a method can lower the mean severity by adding mistakes of low
// height (Karthik et al., ICLR 2021, "No cost likelihood manipulation at
// test time for making better mistakes"), which only top-1 and the counts
// show.
type SeverityTable struct {
	Dataset, Model string
	Fraction       float64
	Rows           []SeverityRow
	// Low and High are the least and the greatest height with a mistake
	// in any row: the table's columns.
	Low, High int
}

// severityTables builds a table per setting whose runs counted their
// mistakes by height (runs of lcl before the counts have none), methods in
// the tables' order.
func severityTables(entries []Entry) []SeverityTable {
	type acc struct {
		row   SeverityRow
		sev   float64
		count map[int]float64
	}
	bySetting := map[settingKey]map[string]*acc{}
	var keys []settingKey
	for _, e := range entries {
		mistakes, ok := e.Hier[experiment.HierMistakes]
		if !ok {
			continue
		}
		k := settingKey{e.Dataset, e.Model, e.Fraction}
		if bySetting[k] == nil {
			bySetting[k] = map[string]*acc{}
			keys = append(keys, k)
		}
		a := bySetting[k][e.Method]
		if a == nil {
			a = &acc{row: SeverityRow{Method: e.Method}, count: map[int]float64{}}
			bySetting[k][e.Method] = a
		}
		a.row.N++
		a.row.Top1 += e.Top1
		a.row.Mistakes += mistakes
		a.sev += e.Hier[experiment.HierSeverity]
		for name, v := range e.Hier {
			if h, ok := experiment.ParseHierHeight(name); ok {
				a.count[h] += v
			}
		}
	}
	sortSettings(keys)
	var out []SeverityTable
	for _, k := range keys {
		t := SeverityTable{Dataset: k.Dataset, Model: k.Model, Fraction: k.Fraction, Low: math.MaxInt, High: -1}
		var sub []Entry
		for _, e := range entries {
			if _, ok := bySetting[k][e.Method]; ok && e.Dataset == k.Dataset && e.Model == k.Model && e.Fraction == k.Fraction {
				sub = append(sub, e)
			}
		}
		for _, m := range methods(sub) {
			a := bySetting[k][m]
			n := float64(a.row.N)
			row := a.row
			row.Top1, row.Mistakes, row.Severity = row.Top1/n, row.Mistakes/n, a.sev/n
			for h, c := range a.count {
				for len(row.ByHeight) <= h {
					row.ByHeight = append(row.ByHeight, 0)
				}
				row.ByHeight[h] = c / n
				if c > 0 {
					t.Low, t.High = min(t.Low, h), max(t.High, h)
				}
			}
			t.Rows = append(t.Rows, row)
		}
		if t.High < 0 {
			t.Low = 0 // no mistakes at all: no height columns
		}
		out = append(out, t)
	}
	return out
}

// At is the row's mean count at height h (0 past its last height).
func (r SeverityRow) At(h int) float64 {
	if h < len(r.ByHeight) {
		return r.ByHeight[h]
	}
	return 0
}

// Heights are the table's height columns, Low to High.
func (t SeverityTable) Heights() []int {
	var hs []int
	for h := t.Low; h <= t.High; h++ {
		hs = append(hs, h)
	}
	return hs
}

// Title names the table's setting.
func (t SeverityTable) Title() string {
	return fmt.Sprintf("%s, %s, DR = %s", t.Dataset, t.Model, experiment.Percent(t.Fraction))
}

// meanCount spells a mean count: whole where it is whole (a single seed, or
// seeds that agree), else to one decimal.
func meanCount(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// severityNote is what the severity tables say under their title.
const severityNote = "Mean over seeds of the number of test examples whose top-1 prediction is wrong, in all and by the height of the lowest common ancestor (LCA) of the true and the predicted class, next to top-1 and the mean mistake severity. " +
	"Read the mean with the counts: a method can lower it by adding mistakes of low height (Karthik et al., ICLR 2021)."

func (r *Report) markdownSeverity(p *errWriter) {
	if len(r.Severity) == 0 {
		return
	}
	p.printf("\n## Mistakes by LCA height\n\n%s\n", severityNote)
	for _, t := range r.Severity {
		hs := t.Heights()
		p.printf("\n### %s\n\n| Method | seeds | top-1 (%%) | mistakes | mean severity |", t.Title())
		for _, h := range hs {
			p.printf(" h=%d |", h)
		}
		p.printf("\n|---|--:|--:|--:|--:|%s\n", strings.Repeat("--:|", len(hs)))
		for _, row := range t.Rows {
			p.printf("| %s | %d | %s | %s | %.3f |", row.Method, row.N, num(row.Top1), meanCount(row.Mistakes), row.Severity)
			for _, h := range hs {
				p.printf(" %s |", meanCount(row.At(h)))
			}
			p.printf("\n")
		}
	}
}

// WriteSeverityCSV writes the severity tables in long format: one line per
// setting, method and height with a mistake in the setting.
func (r *Report) WriteSeverityCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"dataset", "fraction", "model", "method", "seeds", "top1", "mistakes", "mistake_severity", "height", "mistakes_at_height"})
	for _, t := range r.Severity {
		for _, row := range t.Rows {
			for _, h := range t.Heights() {
				cw.Write([]string{t.Dataset, strconv.FormatFloat(t.Fraction, 'g', -1, 64), t.Model, row.Method, strconv.Itoa(row.N),
					f4(row.Top1), f4(row.Mistakes), f4(row.Severity), strconv.Itoa(h), f4(row.At(h))})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// sortSettings orders settings by data set, DR, then model, as the tables do.
func sortSettings(keys []settingKey) {
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Dataset != b.Dataset {
			return a.Dataset < b.Dataset
		}
		if a.Fraction != b.Fraction {
			return a.Fraction < b.Fraction
		}
		return a.Model < b.Model
	})
}

// severityPlot draws the setting's severity table as grouped bars: per LCA
// height the mean count of each method's mistakes there, styled as the
// setting's other charts (es: its entries) style the methods.
func severityPlot(ds, model string, frac float64, es []Entry, tables []SeverityTable) (Plot, bool, error) {
	var t *SeverityTable
	for i := range tables {
		if tb := tables[i]; tb.Dataset == ds && tb.Model == model && tb.Fraction == frac {
			t = &tables[i]
		}
	}
	if t == nil || t.High < 0 {
		return Plot{}, false, nil
	}
	c := figure.BarChart{Title: fmt.Sprintf("%s, %s, DR %s: mistakes by LCA height", ds, model, experiment.Percent(frac)),
		XLabel: "height of the lowest common ancestor of the true and the predicted class", YLabel: "test mistakes (mean over seeds)"}
	for _, h := range t.Heights() {
		c.Categories = append(c.Categories, strconv.Itoa(h))
	}
	style := map[string]int{}
	for i, m := range methods(es) {
		style[m] = i
	}
	for _, row := range t.Rows {
		s := figure.BarSeries{Name: fmt.Sprintf("%s (%s mistakes)", row.Method, meanCount(row.Mistakes)), Style: style[row.Method]}
		for _, h := range t.Heights() {
			s.Values = append(s.Values, row.At(h))
		}
		c.Series = append(c.Series, s)
	}
	png, err := figure.Bars(c)
	return Plot{Name: fileName("severity", ds, model, experiment.Percent(frac)), Title: c.Title, PNG: png}, true, err
}

// latexSeverity writes the severity tables for the LaTeX format.
func (r *Report) latexSeverity(p *errWriter) {
	for _, t := range r.Severity {
		hs := t.Heights()
		p.printf("\n\\begin{table}[t]\n\\centering\n\\caption{%s: mistakes by LCA height, means over seeds. %s}\n", tex(t.Title()), tex(severityNote))
		p.printf("\\begin{tabular}{lrrrr%s}\n\\toprule\nMethod & seeds & top-1 (\\%%) & mistakes & mean severity", strings.Repeat("r", len(hs)))
		for _, h := range hs {
			p.printf(" & $h = %d$", h)
		}
		p.printf(" \\\\\n\\midrule\n")
		for _, row := range t.Rows {
			p.printf("%s & %d & %s & %s & %.3f", tex(row.Method), row.N, num(row.Top1), meanCount(row.Mistakes), row.Severity)
			for _, h := range hs {
				p.printf(" & %s", meanCount(row.At(h)))
			}
			p.printf(" \\\\\n")
		}
		p.printf("\\bottomrule\n\\end{tabular}\n\\end{table}\n")
	}
}
