package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

// severityRuns: the Karthik et al. case on one setting, 2 seeds each. SL
// makes 10 mistakes (2 at height 1, 4 at 2, 4 at 3: severity 2.2); LS
// makes the same high ones and 6 more at height 1 (16 mistakes, severity
// 1.75): a lower mean severity from worse predictions. KD's runs predate
// the counts.
func severityRuns() []simstore.Run {
	var runs []simstore.Run
	for _, m := range []struct {
		strategy string
		top1     float64
		byHeight []float64 // seed 1's; seed 2 has one more mistake at height 2
	}{{"sl", 0.90, []float64{0, 2, 4, 4}}, {"ls", 0.84, []float64{0, 8, 4, 4}}, {"kd", 0.9, nil}} {
		for seed := 1; seed <= 2; seed++ {
			c := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn", Fraction: 0.1, Strategy: m.strategy, Seed: seed}
			r := simstore.Run{ID: c.ID(), Config: c, Status: "done", Top1: []float64{m.top1 - float64(seed-1)/100}, Top5: []float64{0.99}}
			if m.byHeight != nil {
				counts := slices.Clone(m.byHeight)
				counts[2] += float64(seed - 1)
				var n, cost float64
				r.Hier = map[string][]float64{}
				for h, k := range counts {
					n += k
					cost += float64(h) * k
					r.Hier["mistakes_h"+string(rune('0'+h))] = []float64{k}
				}
				r.Hier["mistakes"], r.Hier["mistake_severity"] = []float64{n}, []float64{cost / n}
			}
			runs = append(runs, r)
		}
	}
	return runs
}

// TestSeverityTables: the mean counts per height and method, worked out by
// hand, in the Markdown, CSV and HTML report and as a plot; KD, without
// counts, has no row.
func TestSeverityTables(t *testing.T) {
	entries, _, err := FromRuns(severityRuns())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build("s", entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Severity) != 1 {
		t.Fatalf("%d severity tables, want 1", len(r.Severity))
	}
	tb := r.Severity[0]
	if tb.Low != 1 || tb.High != 3 || len(tb.Rows) != 2 {
		t.Fatalf("table %+v: want heights 1–3 and rows SL, LS", tb)
	}
	// SL: seeds (2,4,4) and (2,5,4): 10 and 11 mistakes, severities 22/10
	// and 24/11. LS: (8,4,4) and (8,5,4): 16 and 17, severities 28/16 and
	// 30/17.
	for _, want := range []SeverityRow{
		{Method: "SL", N: 2, Top1: 89.5, Mistakes: 10.5, Severity: (2.2 + 24.0/11) / 2, ByHeight: []float64{0, 2, 4.5, 4}},
		{Method: "LS", N: 2, Top1: 83.5, Mistakes: 16.5, Severity: (1.75 + 30.0/17) / 2, ByHeight: []float64{0, 8, 4.5, 4}},
	} {
		i := slices.IndexFunc(tb.Rows, func(r SeverityRow) bool { return r.Method == want.Method })
		if i < 0 {
			t.Fatalf("no row of %s", want.Method)
		}
		got := tb.Rows[i]
		if got.N != want.N || !close9(got.Top1, want.Top1) || !close9(got.Mistakes, want.Mistakes) || !close9(got.Severity, want.Severity) ||
			!slices.EqualFunc(got.ByHeight, want.ByHeight, close9) {
			t.Errorf("%s: %+v, want %+v", want.Method, got, want)
		}
	}
	var md bytes.Buffer
	if err := r.Write(&md, "md"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"## Mistakes by LCA height", "### fashion-mnist, cnn, DR = 10%",
		"| Method | seeds | top-1 (%) | mistakes | mean severity | h=1 | h=2 | h=3 |",
		"| SL | 2 | 89.50 | 10.5 | 2.191 | 2 | 4.5 | 4 |", "| LS | 2 | 83.50 | 16.5 | 1.757 | 8 | 4.5 | 4 |"} {
		if !strings.Contains(md.String(), line) {
			t.Errorf("markdown lacks %q:\n%s", line, md.String())
		}
	}
	var tex bytes.Buffer
	if err := r.Write(&tex, "latex"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Method & seeds & top-1 (\\%) & mistakes & mean severity & $h = 1$ & $h = 2$ & $h = 3$ \\\\",
		"LS & 2 & 83.50 & 16.5 & 1.757 & 8 & 4.5 & 4 \\\\"} {
		if !strings.Contains(tex.String(), line) {
			t.Errorf("LaTeX lacks %q:\n%s", line, tex.String())
		}
	}
	var csv bytes.Buffer
	if err := r.WriteSeverityCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 7 ||
		!slices.Contains(lines, "fashion-mnist,0.1,cnn,LS,2,83.5000,16.5000,1.7574,1,8.0000") {
		t.Errorf("severity.csv:\n%s", csv.String())
	}
	if err := r.AddPlots(); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Plots, func(p Plot) bool { return p.Name == "severity-fashion-mnist-cnn-10.png" && len(p.PNG) > 0 }) {
		t.Errorf("no severity plot among %d plots", len(r.Plots))
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), `<tr><td>LS</td><td class="n">2</td><td class="n">83.50</td><td class="n">16.5</td><td class="n">1.757</td><td class="n">8</td><td class="n">4.5</td><td class="n">4</td></tr>`) {
		t.Errorf("report.html lacks LS's severity row")
	}
}

func close9(a, b float64) bool { return near(a, b, 1e-9) }

// Runs without counts (older stores) make no severity section.
func TestSeverityNeedsCounts(t *testing.T) {
	entries, _, err := FromRuns(hierRuns())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build("h", entries)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := r.Write(&md, "md"); err != nil {
		t.Fatal(err)
	}
	if len(r.Severity) != 0 || strings.Contains(md.String(), "Mistakes by LCA height") {
		t.Errorf("a severity section without counts: %+v", r.Severity)
	}
}
