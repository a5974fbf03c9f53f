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
)

// Formats are the table formats Write accepts.
var Formats = []string{"md", "latex", "csv"}

// Write renders the report's tables and statistics in format (md, latex, csv).
// Markdown puts mean ± std in one cell; LaTeX gives the paper's separate mean
// and std tables; CSV is long format, one line per cell.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case "md":
		return r.markdown(w)
	case "latex":
		return r.latex(w)
	case "csv":
		return r.csv(w)
	}
	return fmt.Errorf("report: unknown format %q (expected one of %s)", format, strings.Join(Formats, ", "))
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func pval(p float64) string {
	switch {
	case math.IsNaN(p):
		return "–"
	case p < 0.001:
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

func seedsNote(t Table) string {
	ns := map[int]bool{}
	for _, b := range t.Blocks {
		for _, row := range b.Rows {
			for _, c := range row.Cells {
				if c != nil {
					ns[c.N] = true
				}
			}
		}
	}
	var list []int
	for n := range ns {
		list = append(list, n)
	}
	sort.Ints(list)
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, "/")
}

func (r *Report) markdown(w io.Writer) error {
	p := &errWriter{w: w}
	p.printf("# %s\n\n%d runs. Mean ± sample standard deviation over seeds; best mean of each row in bold.\n", r.Title, r.Runs)
	for _, t := range r.Tables {
		p.printf("\n## %s: %s (seeds per cell: %s)\n\n", t.Dataset, t.Metric.Title(), seedsNote(t))
		p.printf("| DR | Model | %s |\n", strings.Join(t.Methods, " | "))
		p.printf("|---|---|%s\n", strings.Repeat("--:|", len(t.Methods)))
		for _, b := range t.Blocks {
			for _, row := range b.Rows {
				cells := make([]string, len(row.Cells))
				for j, c := range row.Cells {
					switch {
					case c == nil:
						cells[j] = "–"
					case row.Best[j]:
						cells[j] = "**" + num(c.Mean) + "** ± " + num(c.SD)
					default:
						cells[j] = num(c.Mean) + " ± " + num(c.SD)
					}
				}
				p.printf("| %s | %s | %s |\n", experiment.Percent(b.Fraction), row.Model, strings.Join(cells, " | "))
			}
		}
	}
	r.markdownSeverity(p)
	p.printf("\n## Average ranks (top-1)\n\n")
	if r.Ranks == nil {
		p.printf("Not computed: %s.\n", r.RankErr)
	} else {
		k := r.Ranks
		p.printf("Ranked over %d blocks (%s); rank 1 is best.\n\n| Method | Average rank |\n|---|--:|\n", k.N, blocksText(k.Blocks))
		for j, m := range k.Methods {
			p.printf("| %s | %.3f |\n", m, k.AvgRanks[j])
		}
		p.printf("\n%s\n", k.Summary())
	}
	if len(r.Selected) > 0 {
		p.printf("\n## Selected weights\n\nRuns with a validation split report the test figures of the weights of their best validation epoch.\n\n")
		p.printf("| Data set | DR | Model | Method | Seed | Epoch | of |\n|---|---|---|---|--:|--:|--:|\n")
		for _, e := range r.Selected {
			p.printf("| %s | %s | %s | %s | %d | %d | %d |\n", e.Dataset, experiment.Percent(e.Fraction), e.Model, e.Method, e.Seed, e.Selected, e.Trained)
		}
	}
	for _, part := range r.PairedByMetric() {
		p.printf("\n## Paired differences in %s (method − baseline, paired t-test over seeds)\n\n", part[0].Metric.Short())
		p.printf("| Data set | DR | Model | Method | vs | Δ mean | t | p | seeds |\n|---|---|---|---|---|--:|--:|--:|--:|\n")
		for _, d := range part {
			p.printf("| %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", d.Dataset, experiment.Percent(d.Fraction),
				d.Model, d.Method, d.Baseline, signed(d.Diff), num(d.T), pval(d.P), d.N)
		}
	}
	return p.err
}

func blocksText(b string) string {
	if b == "seeds" {
		return "seeds of the single setting"
	}
	return "data set × model × DR settings, mean over seeds"
}

func signed(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// pIs states a p-value in a sentence: "p = 0.012" or "p < 0.001".
func pIs(p float64) string {
	if v := pval(p); strings.HasPrefix(v, "<") {
		return "p " + v[:1] + " " + v[1:]
	} else {
		return "p = " + v
	}
}

// Summary states the test results in one paragraph. With too few blocks
// for the tests it says so, and names no verdict; with every block ranking
// the methods alike F_F is unbounded and its p is that event's exact
// probability (Friedman.Unanimous).
func (k *RankTest) Summary() string {
	chi := fmt.Sprintf("Friedman χ²_F = %.3f (df %g, %s)", k.ChiSq, k.DF1, pIs(k.ChiSqP))
	nemenyi := fmt.Sprintf("Nemenyi critical difference CD = %.3f (q_%g = %.3f, k = %d, N = %d): two methods whose average ranks differ by more than CD differ significantly.",
		k.CD, k.Alpha, k.Q, k.K, k.N)
	if k.TooFewBlocks() {
		return fmt.Sprintf("%s; %s. %s", chi, k.tooFew("α"), nemenyi)
	}
	verdict := "the methods' performances differ significantly"
	if !k.Significant() {
		verdict = "no significant difference between the methods"
	}
	ff := fmt.Sprintf("Iman–Davenport F_F = %.3f (df %g, %g; %s; critical value %.3f at α = %g)", k.FF, k.DF1, k.DF2, pIs(k.FFP), k.FCrit, k.Alpha)
	if k.Unanimous {
		ff = fmt.Sprintf("Iman–Davenport F_F unbounded: all %d blocks rank the methods alike, whose exact probability under equal performance is %s (1/%d! for each block after the first)", k.N, pIs(k.FFP), k.K)
	}
	return fmt.Sprintf("%s; %s: %s. %s", chi, ff, verdict, nemenyi)
}

// tooFew is the clause that replaces the Iman–Davenport test's when the
// blocks are too few for any verdict (Friedman.TooFewBlocks).
// alpha spells α (LaTeX: $\alpha$).
func (k *RankTest) tooFew(alpha string) string {
	return fmt.Sprintf("N = %d blocks are too few to test %d methods at %s = %g: even the same ranking in every block has exact probability %.3f under equal performance (1/%d! for each block after the first), so no test of them can be significant (no Iman–Davenport F_F, no verdict)",
		k.N, k.K, alpha, k.Alpha, k.MinP, k.K)
}

// ffNote is the Iman–Davenport test's result in a few words (the CD
// diagram's note).
func (k *RankTest) ffNote() string {
	if k.TooFewBlocks() {
		return fmt.Sprintf("too few blocks for the test (exact p ≥ %.3f)", k.MinP)
	}
	return pIs(k.FFP)
}

// latexSummary is Summary in LaTeX math.
func (k *RankTest) latexSummary() string {
	chi := fmt.Sprintf("Friedman $\\chi^2_F = %.3f$ (%s)", k.ChiSq, tex(pIs(k.ChiSqP)))
	nemenyi := fmt.Sprintf("Nemenyi $\\mathit{CD} = %.3f$ ($q_{%g} = %.3f$, $k = %d$, $N = %d$).", k.CD, k.Alpha, k.Q, k.K, k.N)
	if k.TooFewBlocks() {
		return fmt.Sprintf("%s; %s. %s", chi, strings.Replace(tex(k.tooFew("α")), "α", `$\alpha$`, 1), nemenyi)
	}
	verdict := "the methods differ significantly"
	if !k.Significant() {
		verdict = "no significant difference"
	}
	ff := strconv.FormatFloat(k.FF, 'f', 3, 64)
	if k.Unanimous {
		ff = `\infty` // every block ranks alike; FFP is the exact probability
	}
	return fmt.Sprintf("%s; Iman--Davenport $F_F = %s$ with (%g, %g) degrees of freedom (%s; critical value %.3f at $\\alpha = %g$): %s. %s",
		chi, ff, k.DF1, k.DF2, tex(pIs(k.FFP)), k.FCrit, k.Alpha, verdict, nemenyi)
}

var latexReplacer = strings.NewReplacer(
	`\`, `\textbackslash{}`, `%`, `\%`, `_`, `\_`, `&`, `\&`, `#`, `\#`, `$`, `\$`, `{`, `\{`, `}`, `\}`,
	"<", `$<$`, "×", `$\times$`, "ε", `$\varepsilon$`, "±", `$\pm$`, "χ²", `$\chi^2$`, "–", "--", "−", "$-$",
	"₁", `$_1$`, "₂", `$_2$`, "₃", `$_3$`, "₄", `$_4$`,
)

func tex(s string) string { return latexReplacer.Replace(s) }

func (r *Report) latex(w io.Writer) error {
	p := &errWriter{w: w}
	p.printf("%% %s: tables written by lcl report (needs \\usepackage{booktabs})\n", r.Title)
	for _, t := range r.Tables {
		for _, part := range []string{"mean", "standard deviation"} {
			p.printf("\n\\begin{table}[t]\n\\centering\n\\caption{%s: %s, %s over seeds (%s per cell)}\n",
				tex(t.Dataset), tex(t.Metric.Title()), part, seedsNote(t))
			p.printf("\\begin{tabular}{l%s}\n\\toprule\nModel & %s \\\\\n", strings.Repeat("r", len(t.Methods)), joinTex(t.Methods))
			for _, b := range t.Blocks {
				p.printf("\\midrule\n\\multicolumn{%d}{l}{DR = %s} \\\\\n", len(t.Methods)+1, tex(experiment.Percent(b.Fraction)))
				for _, row := range b.Rows {
					cells := make([]string, len(row.Cells))
					for j, c := range row.Cells {
						switch {
						case c == nil:
							cells[j] = "--"
						case part == "mean" && row.Best[j]:
							cells[j] = `\textbf{` + num(c.Mean) + `}`
						case part == "mean":
							cells[j] = num(c.Mean)
						default:
							cells[j] = num(c.SD)
						}
					}
					p.printf("%s & %s \\\\\n", tex(row.Model), strings.Join(cells, " & "))
				}
			}
			p.printf("\\bottomrule\n\\end{tabular}\n\\end{table}\n")
		}
	}
	r.latexSeverity(p)
	if k := r.Ranks; k != nil {
		p.printf("\n\\begin{table}[t]\n\\centering\n\\caption{Average ranks (top-1) over %d blocks (%s). %s}\n", k.N, tex(blocksText(k.Blocks)), k.latexSummary())
		p.printf("\\begin{tabular}{lr}\n\\toprule\nMethod & Average rank \\\\\n\\midrule\n")
		for j, m := range k.Methods {
			p.printf("%s & %.3f \\\\\n", tex(m), k.AvgRanks[j])
		}
		p.printf("\\bottomrule\n\\end{tabular}\n\\end{table}\n")
	}
	for _, part := range r.PairedByMetric() {
		p.printf("\n\\begin{table}[t]\n\\centering\n\\caption{Paired differences in %s (method $-$ baseline), paired t-test over seeds}\n", tex(part[0].Metric.Short()))
		p.printf("\\begin{tabular}{lllllrrrr}\n\\toprule\nData set & DR & Model & Method & vs & $\\Delta$ mean & $t$ & $p$ & seeds \\\\\n\\midrule\n")
		for _, d := range part {
			p.printf("%s & %s & %s & %s & %s & %s & %s & %s & %d \\\\\n", tex(d.Dataset), tex(experiment.Percent(d.Fraction)),
				tex(d.Model), tex(d.Method), tex(d.Baseline), tex(signed(d.Diff)), tex(num(d.T)), tex(pval(d.P)), d.N)
		}
		p.printf("\\bottomrule\n\\end{tabular}\n\\end{table}\n")
	}
	return p.err
}

func joinTex(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = tex(s)
	}
	return strings.Join(out, " & ")
}

func (r *Report) csv(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"dataset", "metric", "fraction", "model", "method", "mean", "std", "seeds", "best"})
	for _, t := range r.Tables {
		for _, b := range t.Blocks {
			for _, row := range b.Rows {
				for j, c := range row.Cells {
					if c == nil {
						continue
					}
					cw.Write([]string{t.Dataset, string(t.Metric), strconv.FormatFloat(b.Fraction, 'g', -1, 64), row.Model,
						t.Methods[j], strconv.FormatFloat(c.Mean, 'f', 4, 64), strconv.FormatFloat(c.SD, 'f', 4, 64),
						strconv.Itoa(c.N), strconv.FormatBool(row.Best[j])})
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteRanksCSV writes the average ranks and test statistics as CSV.
func (r *Report) WriteRanksCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"method", "average_rank", "blocks", "chi2_f", "chi2_p", "iman_davenport_f", "f_p", "f_critical", "nemenyi_q", "nemenyi_cd", "alpha"})
	if k := r.Ranks; k != nil {
		for j, m := range k.Methods {
			cw.Write([]string{m, f4(k.AvgRanks[j]), strconv.Itoa(k.N), f4(k.ChiSq), fmt.Sprint(k.ChiSqP), f4(k.FF),
				fmt.Sprint(k.FFP), f4(k.FCrit), f4(k.Q), f4(k.CD), fmt.Sprint(k.Alpha)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WritePairedCSV writes the paired differences as CSV.
func (r *Report) WritePairedCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"dataset", "fraction", "model", "method", "baseline", "diff", "sd", "t", "p", "seeds", "metric"})
	for _, d := range r.Paired {
		cw.Write([]string{d.Dataset, strconv.FormatFloat(d.Fraction, 'g', -1, 64), d.Model, d.Method, d.Baseline,
			f4(d.Diff), f4(d.SD), f4(d.T), fmt.Sprint(d.P), strconv.Itoa(d.N), string(d.Metric)})
	}
	cw.Flush()
	return cw.Error()
}

func f4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// errWriter keeps the first write error so renderers can print freely.
type errWriter struct {
	w   io.Writer
	err error
}

func (p *errWriter) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

// PairedByMetric splits Paired into its metrics' parts, in table order.
func (r *Report) PairedByMetric() [][]PairedRow {
	var out [][]PairedRow
	for _, m := range metrics {
		var part []PairedRow
		for _, d := range r.Paired {
			if d.Metric == m {
				part = append(part, d)
			}
		}
		if len(part) > 0 {
			out = append(out, part)
		}
	}
	return out
}
