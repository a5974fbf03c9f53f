package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Metric names a reported quantity.
type Metric string

// The metrics every report has, and the hierarchical ones of runs with a
// hierarchy (Bertinetto et al., CVPR 2020; lower is better).
const (
	Top1     Metric = "top1"
	Top5     Metric = "top5"
	Severity Metric = "mistake_severity"
	HDist1   Metric = "hdist1"
	HDist5   Metric = "hdist5"
	HDist20  Metric = "hdist20"
)

// metrics are the reported metrics in table order.
var metrics = []Metric{Top1, Top5, Severity, HDist1, HDist5, HDist20}

// Title is how tables and plots name the metric.
func (m Metric) Title() string {
	switch m {
	case Top5:
		return "Top-5 accuracy (%)"
	case Severity:
		return "Mistake severity (LCA height)"
	case HDist1:
		return "Hierarchical distance@1"
	case HDist5:
		return "Hierarchical distance@5"
	case HDist20:
		return "Hierarchical distance@20"
	}
	return "Top-1 accuracy (%)"
}

// Short is how a paired table's rows name the metric.
func (m Metric) Short() string {
	switch m {
	case Top1:
		return "top-1"
	case Top5:
		return "top-5"
	case Severity:
		return "severity"
	case HDist1:
		return "hdist@1"
	case HDist5:
		return "hdist@5"
	case HDist20:
		return "hdist@20"
	}
	return string(m)
}

// LowerIsBetter says the best mean of a row is the least.
func (m Metric) LowerIsBetter() bool { return m != Top1 && m != Top5 }

func (m Metric) of(e Entry) float64 {
	switch m {
	case Top1:
		return e.Top1
	case Top5:
		return e.Top5
	}
	if v, ok := e.Hier[string(m)]; ok {
		return v
	}
	return math.NaN()
}

// Cell is one method's result in one setting, over seeds.
type Cell struct {
	Mean, SD float64
	N        int
	BySeed   map[int]float64
}

// Row is one model within a data-ratio block.
type Row struct {
	Model string
	Cells []*Cell // one per Table.Methods entry; nil where the method has no run
	Best  []bool  // the highest mean of the row (ties all marked)
}

// Block is the rows of one data ratio.
type Block struct {
	Fraction float64
	Rows     []Row
}

// Table is one data set and metric.
type Table struct {
	Dataset string
	Metric  Metric
	Methods []string
	Blocks  []Block
}

// RankTest is the Friedman/Iman–Davenport/Nemenyi analysis of top-1 accuracy.
type RankTest struct {
	Methods []string
	// Blocks says what was ranked: "settings" (data set × model × DR, the
	// mean over seeds each) or "seeds" when the runs hold a single setting.
	Blocks string
	Friedman
}

// PairedRow compares one method with a baseline in one setting, paired by seed.
type PairedRow struct {
	Metric   Metric
	Dataset  string
	Model    string
	Fraction float64
	Method   string
	Baseline string
	Paired
}

// Report is everything `lcl report` shows.
type Report struct {
	Title   string
	Runs    int // runs the entries came from
	Tables  []Table
	Ranks   *RankTest // nil when fewer than two complete blocks or methods
	RankErr string    // why Ranks is nil
	Paired  []PairedRow
	// Severity holds, per setting whose runs counted them, the methods'
	// mistakes by LCA height.
	Severity []SeverityTable
	// Selected lists the entries whose figures are of weights model
	// selection kept, with the epoch (nil when no run selected).
	Selected []Entry
	Plots    []Plot
	entries  []Entry
}

// Alpha is the significance level of the rank tests.
const Alpha = 0.05

type settingKey struct {
	Dataset, Model string
	Fraction       float64
}

// Build aggregates entries into tables and statistics (plots are added by Plots).
func Build(title string, entries []Entry) (*Report, error) {
	if len(entries) == 0 {
		return nil, errors.New("report: no finished runs to report")
	}
	r := &Report{Title: title, entries: entries}
	ids := map[string]bool{}
	for _, e := range entries {
		ids[e.RunID] = true
	}
	r.Runs = len(ids)
	var datasets []string
	for _, e := range entries {
		datasets = append(datasets, e.Dataset)
	}
	for _, ds := range uniqueSorted(datasets) {
		var sub []Entry
		for _, e := range entries {
			if e.Dataset == ds {
				sub = append(sub, e)
			}
		}
		for _, m := range metrics {
			if t, ok := buildTable(ds, m, sub); ok {
				r.Tables = append(r.Tables, t)
			}
		}
	}
	r.Ranks, r.RankErr = rankTest(entries)
	r.Severity = severityTables(entries)
	for _, m := range metrics {
		if m != Top5 {
			r.Paired = append(r.Paired, pairedRows(entries, m)...)
		}
	}
	for _, e := range entries {
		if e.Selected > 0 {
			r.Selected = append(r.Selected, e)
		}
	}
	sort.SliceStable(r.Selected, func(i, j int) bool {
		a, b := r.Selected[i], r.Selected[j]
		if a.Dataset != b.Dataset {
			return a.Dataset < b.Dataset
		}
		if a.Fraction != b.Fraction {
			return a.Fraction < b.Fraction
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Method != b.Method {
			return a.Method < b.Method
		}
		return a.Seed < b.Seed
	})
	return r, nil
}

func cells(entries []Entry, m Metric) map[settingKey]map[string]*Cell {
	out := map[settingKey]map[string]*Cell{}
	for _, e := range entries {
		v := m.of(e)
		if math.IsNaN(v) {
			continue
		}
		k := settingKey{e.Dataset, e.Model, e.Fraction}
		if out[k] == nil {
			out[k] = map[string]*Cell{}
		}
		c := out[k][e.Method]
		if c == nil {
			c = &Cell{BySeed: map[int]float64{}}
			out[k][e.Method] = c
		}
		c.BySeed[e.Seed] = v
	}
	for _, byMethod := range out {
		for _, c := range byMethod {
			vals := make([]float64, 0, len(c.BySeed))
			for _, s := range sortedSeeds(c.BySeed) {
				vals = append(vals, c.BySeed[s])
			}
			c.N = len(vals)
			c.Mean, c.SD = meanSD(vals)
		}
	}
	return out
}

func sortedSeeds(m map[int]float64) []int {
	seeds := make([]int, 0, len(m))
	for s := range m {
		seeds = append(seeds, s)
	}
	sort.Ints(seeds)
	return seeds
}

func buildTable(ds string, m Metric, entries []Entry) (Table, bool) {
	cs := cells(entries, m)
	if len(cs) == 0 {
		return Table{}, false
	}
	t := Table{Dataset: ds, Metric: m, Methods: methods(entries)}
	var fracs []float64
	var models []string
	for k := range cs {
		fracs = append(fracs, k.Fraction)
		models = append(models, k.Model)
	}
	for _, f := range uniqueSorted(fracs) {
		b := Block{Fraction: f}
		for _, model := range uniqueSorted(models) {
			byMethod := cs[settingKey{ds, model, f}]
			if byMethod == nil {
				continue
			}
			row := Row{Model: model, Cells: make([]*Cell, len(t.Methods)), Best: make([]bool, len(t.Methods))}
			sign := 1.0 // the best is the greatest sign·mean
			if m.LowerIsBetter() {
				sign = -1
			}
			best := math.Inf(-1)
			for j, meth := range t.Methods {
				row.Cells[j] = byMethod[meth]
				if c := row.Cells[j]; c != nil && sign*c.Mean > best {
					best = sign * c.Mean
				}
			}
			for j, c := range row.Cells {
				row.Best[j] = c != nil && sign*c.Mean == best
			}
			b.Rows = append(b.Rows, row)
		}
		t.Blocks = append(t.Blocks, b)
	}
	return t, true
}

// rankTest ranks the methods present in every setting. With two or more
// settings each setting is a block (its mean over seeds), as in the paper;
// with a single setting the seeds are the blocks.
func rankTest(entries []Entry) (*RankTest, string) {
	cs := cells(entries, Top1)
	all := methods(entries)
	// Methods present in every setting.
	var ms []string
	for _, m := range all {
		ok := true
		for _, byMethod := range cs {
			ok = ok && byMethod[m] != nil
		}
		if ok {
			ms = append(ms, m)
		}
	}
	if len(ms) < 2 {
		return nil, "fewer than two methods have results in every setting"
	}
	var scores [][]float64
	blocks := "settings"
	if len(cs) >= 2 {
		keys := make([]settingKey, 0, len(cs))
		for k := range cs {
			keys = append(keys, k)
		}
		for _, k := range keys {
			row := make([]float64, len(ms))
			for j, m := range ms {
				row[j] = cs[k][m].Mean
			}
			scores = append(scores, row)
		}
	} else {
		blocks = "seeds"
		for _, byMethod := range cs {
			for _, seed := range sortedSeeds(byMethod[ms[0]].BySeed) {
				row := make([]float64, len(ms))
				complete := true
				for j, m := range ms {
					v, ok := byMethod[m].BySeed[seed]
					complete = complete && ok
					row[j] = v
				}
				if complete {
					scores = append(scores, row)
				}
			}
		}
	}
	if len(scores) < 2 {
		return nil, fmt.Sprintf("only %d complete block (%s); ranking needs at least 2", len(scores), blocks)
	}
	f, err := FriedmanTest(scores, Alpha)
	if err != nil {
		return nil, err.Error()
	}
	return &RankTest{Methods: ms, Blocks: blocks, Friedman: f}, ""
}

// splitPreset splits a method name into its stem and the " [preset]" it
// ends with when a report holds runs of several presets ("" otherwise).
func splitPreset(method string) (stem, preset string) {
	if i := strings.LastIndex(method, " ["); i >= 0 && strings.HasSuffix(method, "]") {
		return method[:i], method[i:]
	}
	return method, ""
}

// Baselines are the methods every other method is compared with, paired by seed.
var Baselines = []string{"SL", "LS"}

// pairedRows compares every method with the Baselines in metric m, paired
// by seed.
func pairedRows(entries []Entry, m Metric) []PairedRow {
	cs := cells(entries, m)
	keys := make([]settingKey, 0, len(cs))
	for k := range cs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Dataset != b.Dataset {
			return a.Dataset < b.Dataset
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Fraction < b.Fraction
	})
	ms := methods(entries)
	var out []PairedRow
	for _, k := range keys {
		for _, base := range Baselines {
			for _, meth := range ms {
				// A method of a preset (a grid's recipe axis: "LCL(…) [cifar-modern]")
				// is compared with the baselines of the same preset.
				stem, preset := splitPreset(meth)
				bc, c := cs[k][base+preset], cs[k][meth]
				// Baselines are compared with those before them only (LS vs SL, not SL vs LS).
				if mi := slices.Index(Baselines, stem); stem == base || bc == nil || c == nil || (mi >= 0 && mi < slices.Index(Baselines, base)) {
					continue
				}
				var a, b []float64
				for _, s := range sortedSeeds(c.BySeed) {
					if bv, ok := bc.BySeed[s]; ok {
						a = append(a, c.BySeed[s])
						b = append(b, bv)
					}
				}
				p, err := PairedT(a, b)
				if err != nil {
					p = Paired{N: len(a), Diff: math.NaN(), T: math.NaN(), P: math.NaN()}
					if len(a) == 1 {
						p.Diff = a[0] - b[0]
					}
				}
				out = append(out, PairedRow{Metric: m, Dataset: k.Dataset, Model: k.Model, Fraction: k.Fraction,
					Method: meth, Baseline: base + preset, Paired: p})
			}
		}
	}
	return out
}
