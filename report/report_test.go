package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

// fakeRuns builds stored runs for two models × two ratios × SL, LS, DML,
// LCL(ε=0.99) × 3 seeds, with top-1 = base + method offset + seed/10 so that
// every expected number is known.
func fakeRuns(t testing.TB) []simstore.Run {
	t.Helper()
	type meth struct {
		strategy string
		params   map[string]string
		source   string
		offset   []float64 // per model (DML: two peers)
	}
	ms := []meth{
		{"sl", nil, "", []float64{0}},
		{"ls", nil, "", []float64{0.5}},
		{"dml", nil, "", []float64{0.2, 0.3}},
		{"lcl", map[string]string{"epsilon": "0.99"}, "semantic", []float64{0.4}},
	}
	var runs []simstore.Run
	for mi, model := range []string{"cnn", "resnet18"} {
		for _, frac := range []float64{0.1, 0.2} {
			for _, m := range ms {
				for seed := 1; seed <= 3; seed++ {
					c := simstore.RunConfig{Labels: "fashion-mnist", Model: model, Fraction: frac, Strategy: m.strategy,
						Source: m.source, Params: m.params, Seed: seed, Epochs: 3}
					base := 80 + 20*frac + float64(mi)
					var top1, top5 []float64
					for _, off := range m.offset {
						top1 = append(top1, (base+off+float64(seed)/10)/100) // runs store fractions
						top5 = append(top5, 0.99)
					}
					var epochs []map[string]any
					for ep := 1; ep <= 3; ep++ {
						e := map[string]any{"epoch": ep, "loss": 1.0 / float64(ep), "top1": []float64{top1[0] - float64(3-ep)/100}}
						if m.strategy == "lcl" {
							e["target_entropy"] = 1.5 / float64(ep)
						}
						epochs = append(epochs, e)
					}
					ep, _ := json.Marshal(epochs)
					runs = append(runs, simstore.Run{ID: c.ID(), Config: c, Status: "done", Top1: top1, Top5: top5, Epochs: ep})
				}
			}
		}
	}
	runs = append(runs, simstore.Run{ID: "rx", Status: "running"})
	return runs
}

func buildFake(t testing.TB) *Report {
	t.Helper()
	entries, skipped, err := FromRuns(fakeRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 1 {
		t.Errorf("skipped %d, want the 1 unfinished run", skipped)
	}
	r, err := Build("test grid", entries)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTables(t *testing.T) {
	r := buildFake(t)
	if r.Runs != 48 {
		t.Errorf("runs %d, want 48", r.Runs)
	}
	if len(r.Tables) != 2 {
		t.Fatalf("%d tables, want top-1 and top-5 for one data set", len(r.Tables))
	}
	tab := r.Tables[0]
	wantMethods := []string{"SL", "LS", "DML₁", "DML₂", "LCL(ε=0.99, semantic)"}
	if strings.Join(tab.Methods, ",") != strings.Join(wantMethods, ",") {
		t.Fatalf("methods %q, want %q", tab.Methods, wantMethods)
	}
	if len(tab.Blocks) != 2 || tab.Blocks[0].Fraction != 0.1 || len(tab.Blocks[0].Rows) != 2 {
		t.Fatalf("blocks %+v", tab.Blocks)
	}
	row := tab.Blocks[0].Rows[1] // resnet18 at 10%
	// base 83, seeds add 0.1..0.3 (mean 0.2, sd 0.1)
	for j, off := range []float64{0, 0.5, 0.2, 0.3, 0.4} {
		c := row.Cells[j]
		if math.Abs(c.Mean-(83+off+0.2)) > 1e-9 || math.Abs(c.SD-0.1) > 1e-9 || c.N != 3 {
			t.Errorf("%s: %+v, want mean %.2f sd 0.1", tab.Methods[j], c, 83+off+0.2)
		}
		if row.Best[j] != (j == 1) {
			t.Errorf("%s best = %v", tab.Methods[j], row.Best[j])
		}
	}

	var md bytes.Buffer
	if err := r.Write(&md, "md"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| DR | Model | SL | LS | DML₁ | DML₂ | LCL(ε=0.99, semantic) |",
		"| 10% | resnet18 | 83.20 ± 0.10 | **83.70** ± 0.10 | 83.40 ± 0.10 | 83.50 ± 0.10 | 83.60 ± 0.10 |",
		"## Average ranks (top-1)",
		"| LS | 1.000 |",
		"| fashion-mnist | 10% | cnn | LCL(ε=0.99, semantic) | SL | +0.40 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var tex bytes.Buffer
	if err := r.Write(&tex, "latex"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`\textbf{83.70}`, `LCL($\varepsilon$=0.99, semantic)`, `DML$_1$`, `\multicolumn{6}{l}{DR = 10\%}`, "standard deviation over seeds", `$\chi^2_F = 16.000$`, `$F_F = \infty$`, `set $\times$ model`} {
		if !strings.Contains(tex.String(), want) {
			t.Errorf("latex lacks %q", want)
		}
	}
	if strings.Contains(tex.String(), `\_F`) || strings.Contains(tex.String(), "×") {
		t.Error("latex has escaped subscripts or raw unicode in math")
	}
	var cb bytes.Buffer
	if err := r.Write(&cb, "csv"); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// header + 2 metrics × 2 ratios × 2 models × 5 methods
	if len(recs) != 1+40 || recs[0][5] != "mean" {
		t.Errorf("csv has %d records; header %q", len(recs), recs[0])
	}
	if err := r.Write(&cb, "html"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestRanksAndPaired(t *testing.T) {
	r := buildFake(t)
	k := r.Ranks
	if k == nil {
		t.Fatalf("no rank test: %s", r.RankErr)
	}
	if k.Blocks != "settings" || k.N != 4 || k.K != 5 {
		t.Errorf("ranked %d blocks of %d methods over %s", k.N, k.K, k.Blocks)
	}
	// Every setting orders the methods LS > LCL > DML₂ > DML₁ > SL.
	want := map[string]float64{"LS": 1, "LCL(ε=0.99, semantic)": 2, "DML₂": 3, "DML₁": 4, "SL": 5}
	for i, m := range k.Methods {
		if k.AvgRanks[i] != want[m] {
			t.Errorf("%s rank %v, want %v", m, k.AvgRanks[i], want[m])
		}
	}
	if !math.IsInf(k.FF, 1) || !k.Significant() {
		t.Errorf("identical orderings: F_F %v p %v", k.FF, k.FFP)
	}
	// Per setting: 4 methods against SL, 3 against LS (not SL).
	if len(r.Paired) != 4*(4+3) {
		t.Errorf("%d paired rows, want 28", len(r.Paired))
	}
	pairs := map[string]bool{}
	for _, d := range r.Paired {
		pairs[d.Method+" vs "+d.Baseline] = true
	}
	if !pairs["LS vs SL"] || pairs["SL vs LS"] || !pairs["LCL(ε=0.99, semantic) vs LS"] {
		t.Errorf("pairs %v", pairs)
	}
	for _, d := range r.Paired {
		// Differences are constant over seeds: exact, p = 0.
		if d.N != 3 || d.P != 0 {
			t.Errorf("%+v", d)
		}
	}
}

func TestRanksOverSeedsForOneSetting(t *testing.T) {
	entries, _, err := FromRuns(fakeRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	var one []Entry
	for _, e := range entries {
		if e.Model == "cnn" && e.Fraction == 0.1 {
			one = append(one, e)
		}
	}
	r, err := Build("one", one)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ranks == nil || r.Ranks.Blocks != "seeds" || r.Ranks.N != 3 {
		t.Fatalf("ranks %+v (%s)", r.Ranks, r.RankErr)
	}
}

func TestPlotsAndHTML(t *testing.T) {
	r := buildFake(t)
	if err := r.AddPlots(); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range r.Plots {
		names[p.Name] = true
		img, err := png.Decode(bytes.NewReader(p.PNG))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 100 {
			t.Errorf("%s: %v", p.Name, b)
		}
	}
	for _, want := range []string{
		"top1-vs-dr-fashion-mnist-cnn.png", "curves-fashion-mnist-cnn-10.png",
		"entropy-fashion-mnist-resnet18-20.png", "cd-diagram.png",
	} {
		if !names[want] {
			t.Errorf("no plot %s in %v", want, names)
		}
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	s := html.String()
	if n := strings.Count(s, `src="data:image/png;base64,`); n != len(r.Plots) {
		t.Errorf("%d embedded images, want %d", n, len(r.Plots))
	}
	for _, bad := range []string{"http://", "https://", "<script", "<link"} {
		if strings.Contains(s, bad) {
			t.Errorf("HTML is not self-contained: contains %q", bad)
		}
	}
	if !strings.Contains(s, "χ²<sub>F</sub> = 16.000") || !strings.Contains(s, "q<sub>0.05</sub> = 2.728") {
		t.Error("HTML summary lacks subscripts")
	}
	if !strings.Contains(s, `<td class="n best">83.70 <span class="sd">± 0.10</span></td>`) {
		t.Error("HTML table lacks the bold best cell")
	}
}

func TestCliques(t *testing.T) {
	tests := []struct {
		ranks []float64
		cd    float64
		want  string
	}{
		{[]float64{1.964, 2.000, 2.893, 3.143}, 1.25, "[[0 3]]"},
		{[]float64{1.964, 2.000, 2.893, 3.143}, 1.12, "[[0 2] [2 3]]"}, // Demšar Fig. 1(a)
		{[]float64{1, 2, 3}, 0.5, "[]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(Cliques(tt.ranks, tt.cd)); got != tt.want {
			t.Errorf("Cliques(%v, %v) = %s, want %s", tt.ranks, tt.cd, got, tt.want)
		}
	}
}

// A run with model selection reports the test figures of its best
// validation epoch: the report says which epoch (per peer: the last
// logged epoch's best_epoch) of how many; runs without selection are not
// listed, and a report without any has no such section.
func TestSelectedWeights(t *testing.T) {
	runs := fakeRuns(t)
	if r := buildFake(t); r.Selected != nil {
		t.Fatalf("runs without selection listed: %+v", r.Selected)
	}
	var md bytes.Buffer
	if err := buildFake(t).Write(&md, "md"); err != nil || strings.Contains(md.String(), "Selected weights") {
		t.Fatalf("markdown without selection: %v\n%s", err, md.String())
	}
	c := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn", Fraction: 0.1, Strategy: "dml", Seed: 9, Epochs: 5}
	// Four epochs of five (early stopping), no test figures per epoch.
	ep := `[{"epoch":1,"val":[{"top1":0.5},{"top1":0.4}],"best_epoch":[1,1]},{"epoch":2,"best_epoch":[2,1]},` +
		`{"epoch":3,"best_epoch":[2,3]},{"epoch":4,"best_epoch":[2,3]}]`
	runs = append(runs, simstore.Run{ID: c.ID(), Config: c, Status: "done", Top1: []float64{0.8, 0.7}, Top5: []float64{0.9, 0.9}, Epochs: json.RawMessage(ep)})
	entries, _, err := FromRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build("with selection", entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Selected) != 2 || r.Selected[0].Method != "DML₁" || r.Selected[0].Selected != 2 || r.Selected[1].Selected != 3 ||
		r.Selected[0].Trained != 4 || r.Selected[0].Seed != 9 {
		t.Fatalf("selected %+v", r.Selected)
	}
	md.Reset()
	if err := r.Write(&md, "md"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n## Selected weights\n", "| fashion-mnist | 10% | cnn | DML₁ | 9 | 2 | 4 |\n", "| fashion-mnist | 10% | cnn | DML₂ | 9 | 3 | 4 |\n"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil || !strings.Contains(html.String(), `<td>DML₂</td><td class="n">9</td><td class="n">3</td><td class="n">4</td>`) {
		t.Errorf("HTML lacks the selected epoch: %v", err)
	}
}

// Runs of a grid's presets axis are told apart in every table by the
// preset at the end of the method's name; runs of one preset keep the plain
// names.
func TestPresetsInMethodNames(t *testing.T) {
	var runs []simstore.Run
	for _, preset := range []string{"", "cifar-modern"} {
		for seed := 1; seed <= 2; seed++ {
			c := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn", Fraction: 0.1, Strategy: "lcl",
				Source: "semantic", Params: map[string]string{"epsilon": "0.9"}, Seed: seed, Epochs: 1, Preset: preset}
			ep, _ := json.Marshal([]map[string]any{{"epoch": 1, "loss": 1.0, "top1": []float64{0.5}}})
			runs = append(runs, simstore.Run{ID: c.ID(), Config: c, Status: "done", Top1: []float64{0.5}, Top5: []float64{0.9}, Epochs: ep})
		}
	}
	names := func(runs []simstore.Run) []string {
		entries, _, err := FromRuns(runs)
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, e := range entries {
			set[e.Method] = true
		}
		return slices.Sorted(maps.Keys(set))
	}
	if got, want := names(runs), []string{"LCL(ε=0.9, semantic) [cifar-modern]", "LCL(ε=0.9, semantic) [default]"}; !slices.Equal(got, want) {
		t.Errorf("two presets: methods %q, want %q", got, want)
	}
	if got, want := names(runs[2:]), []string{"LCL(ε=0.9, semantic)"}; !slices.Equal(got, want) {
		t.Errorf("one preset: methods %q, want %q", got, want)
	}
}

// With runs of several presets, every method is compared with the
// baselines of its own preset: LCL [cifar-modern] with SL [cifar-modern],
// never with SL [default]; the differences are the seeds' by hand.
func TestPairedWithinPreset(t *testing.T) {
	top1 := map[string]map[string][]float64{ // preset → strategy → per seed
		"":             {"sl": {0.80, 0.82, 0.81}, "lcl": {0.83, 0.84, 0.82}},
		"cifar-modern": {"sl": {0.70, 0.71, 0.72}, "lcl": {0.70, 0.74, 0.72}},
	}
	var runs []simstore.Run
	for preset, byStrategy := range top1 {
		for strategy, acc := range byStrategy {
			for i, a := range acc {
				c := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn", Fraction: 0.1, Strategy: strategy, Seed: i + 1,
					Epochs: 1, Preset: preset}
				if strategy == "lcl" {
					c.Source, c.Params = "semantic", map[string]string{"epsilon": "0.9"}
				}
				ep, _ := json.Marshal([]map[string]any{{"epoch": 1, "loss": 1.0, "top1": []float64{a}}})
				runs = append(runs, simstore.Run{ID: c.ID(), Config: c, Status: "done", Top1: []float64{a}, Top5: []float64{0.9}, Epochs: ep})
			}
		}
	}
	entries, _, err := FromRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, p := range pairedRows(entries, Top1) {
		got[p.Method+" vs "+p.Baseline] = p.Diff
	}
	want := map[string]float64{
		"LCL(ε=0.9, semantic) [default] vs SL [default]":           100 * (0.03 + 0.02 + 0.01) / 3,
		"LCL(ε=0.9, semantic) [cifar-modern] vs SL [cifar-modern]": 100 * (0.00 + 0.03 + 0.00) / 3,
	}
	if len(got) != len(want) {
		t.Fatalf("paired rows %v, want %v", got, want)
	}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-9 {
			t.Errorf("%s: diff %v, want %v (rows %v)", k, got[k], w, got)
		}
	}
}
