package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

// hierRuns: SL and LS on one setting, 3 seeds, with hierarchical metrics
// LS lower than SL by a constant (severity by 0.2, hdist@5 by 0.1) and
// top-1 higher; a third method without them.
func hierRuns() []simstore.Run {
	var runs []simstore.Run
	for _, m := range []struct {
		strategy    string
		top1, sev   float64
		hd5         float64
		hierarchies bool
	}{{"sl", 0.80, 2.0, 1.5, true}, {"ls", 0.81, 1.8, 1.4, true}, {"kd", 0.82, 0, 0, false}} {
		for seed := 1; seed <= 3; seed++ {
			c := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn", Fraction: 0.1, Strategy: m.strategy, Seed: seed}
			s := float64(seed) / 10
			r := simstore.Run{ID: c.ID(), Config: c, Status: "done", Top1: []float64{m.top1 + s/100}, Top5: []float64{0.99}}
			if m.hierarchies {
				r.Hier = map[string][]float64{"mistake_severity": {m.sev + s}, "hdist1": {m.sev/2 + s}, "hdist5": {m.hd5 + s}, "hdist20": {2 + s}}
			}
			runs = append(runs, r)
		}
	}
	return runs
}

// TestHierarchicalTablesAndPaired: the hierarchical metrics get tables in
// which the least mean is best, and paired rows like top-1's.
func TestHierarchicalTablesAndPaired(t *testing.T) {
	entries, _, err := FromRuns(hierRuns())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build("h", entries)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[Metric]Table{}
	for _, tb := range r.Tables {
		tables[tb.Metric] = tb
	}
	for _, m := range []Metric{Top1, Top5, Severity, HDist1, HDist5, HDist20} {
		if _, ok := tables[m]; !ok {
			t.Fatalf("no %s table (tables %v)", m, tables)
		}
	}
	sev := tables[Severity]
	row := sev.Blocks[0].Rows[0]
	for j, meth := range sev.Methods {
		c := row.Cells[j]
		switch meth {
		case "SL":
			if c == nil || math.Abs(c.Mean-2.2) > 1e-12 || row.Best[j] {
				t.Errorf("SL severity %+v best %v, want mean 2.2, not best", c, row.Best[j])
			}
		case "LS":
			if c == nil || math.Abs(c.Mean-2.0) > 1e-12 || !row.Best[j] {
				t.Errorf("LS severity %+v best %v, want mean 2.0 and best (lower is better)", c, row.Best[j])
			}
		default:
			if c != nil {
				t.Errorf("%s has a severity cell %+v without hierarchical metrics", meth, c)
			}
		}
	}
	got := map[Metric]PairedRow{}
	for _, d := range r.Paired {
		if d.Method == "LS" && d.Baseline == "SL" {
			got[d.Metric] = d
		}
	}
	for m, diff := range map[Metric]float64{Top1: 1, Severity: -0.2, HDist5: -0.1, HDist1: -0.1, HDist20: 0} {
		d, ok := got[m]
		if !ok {
			t.Errorf("no paired row LS vs SL in %s", m)
			continue
		}
		if d.N != 3 || math.Abs(d.Diff-diff) > 1e-9 {
			t.Errorf("LS vs SL in %s: %+v, want Δ %v over 3 seeds", m, d, diff)
		}
	}
	var md bytes.Buffer
	if err := r.Write(&md, "md"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## fashion-mnist: Mistake severity (LCA height)", "## Paired differences in severity",
		"## Paired differences in hdist@5", "## Paired differences in top-1"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var pc bytes.Buffer
	if err := r.WritePairedCSV(&pc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pc.String(), ",mistake_severity\n") || !strings.HasPrefix(pc.String(), "dataset,fraction,model,method,baseline,diff,sd,t,p,seeds,metric\n") {
		t.Errorf("paired CSV:\n%s", pc.String())
	}
	if err := r.AddPlots(); err != nil {
		t.Fatal(err)
	}
	plots := map[string]bool{}
	for _, p := range r.Plots {
		plots[p.Name] = len(p.PNG) > 0
	}
	for _, want := range []string{"tradeoff-mistake_severity-fashion-mnist-cnn-10.png", "tradeoff-hdist5-fashion-mnist-cnn-10.png"} {
		if !plots[want] {
			t.Errorf("no plot %s among %v", want, plots)
		}
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "Paired differences in severity") {
		t.Errorf("HTML lacks the severity paired table")
	}
}
