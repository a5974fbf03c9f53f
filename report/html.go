package report

import (
	"encoding/base64"
	"html/template"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/lcl-project/lcl/experiment"
)

// WriteHTML writes one self-contained HTML file: the tables, the rank
// test, the paired differences and every plot as a base64 data URI, with
// inline CSS and no scripts, so it opens anywhere, offline.
func (r *Report) WriteHTML(w io.Writer) error {
	return htmlTmpl.Execute(w, map[string]any{
		"R":       r,
		"Created": time.Now().UTC().Format("2006-01-02 15:04 MST"),
	})
}

// subscript matches the statistics' subscripts in Summary: χ²_F, F_F, q_0.05.
var subscript = regexp.MustCompile(`(χ²|F|q)_([A-Z]|[0-9.]*[0-9])`)

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":    experiment.Percent,
	"num":    num,
	"signed": signed,
	"pval":   pval,
	"f3":     func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
	"inc":    func(n int) int { return n + 1 },
	"png": func(b []byte) template.URL {
		return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
	},
	"sig":          func(p float64) bool { return p < Alpha },
	"blocks":       blocksText,
	"count":        meanCount,
	"severityNote": func() string { return severityNote },
	"summary": func(k *RankTest) template.HTML {
		s := template.HTMLEscapeString(k.Summary())
		return template.HTML(subscript.ReplaceAllString(s, "$1<sub>$2</sub>"))
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.R.Title}}</title>
<style>
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; border-bottom: 2px solid #444; padding-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .92em; }
th, td { padding: .3em .7em; border-bottom: 1px solid #ccc; }
th { background: #f0f0f0; text-align: center; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.block td { background: #fafafa; font-weight: bold; border-top: 2px solid #888; }
td.best { font-weight: bold; }
.sd { color: #666; }
.sig { background: #e8f4e8; }
p.note { color: #555; font-size: .9em; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #444; font-size: .9em; }
</style>
</head>
<body>
<h1>{{.R.Title}}</h1>
<p class="note">{{.R.Runs}} runs. Mean ± sample standard deviation over seeds; the best mean of each row is bold. Written by lcl report, {{.Created}}.</p>
{{range .R.Tables}}{{$t := .}}
<h2>{{.Dataset}}: {{.Metric.Title}}</h2>
<table>
<tr><th>Model</th>{{range .Methods}}<th>{{.}}</th>{{end}}</tr>
{{range .Blocks}}<tr class="block"><td colspan="{{len $t.Methods | inc}}">DR = {{pct .Fraction}}</td></tr>
{{range .Rows}}{{$row := .}}<tr><td>{{.Model}}</td>{{range $j, $c := .Cells}}{{if $c}}<td class="n{{if index $row.Best $j}} best{{end}}">{{num $c.Mean}} <span class="sd">± {{num $c.SD}}</span></td>{{else}}<td class="n">–</td>{{end}}{{end}}</tr>
{{end}}{{end}}</table>
{{end}}
{{if .R.Severity}}
<h2>Mistakes by LCA height</h2>
<p class="note">{{severityNote}}</p>
{{range .R.Severity}}{{$t := .}}
<h3>{{.Title}}</h3>
<table>
<tr><th>Method</th><th>seeds</th><th>top-1 (%)</th><th>mistakes</th><th>mean severity</th>{{range .Heights}}<th>h = {{.}}</th>{{end}}</tr>
{{range .Rows}}{{$row := .}}<tr><td>{{.Method}}</td><td class="n">{{.N}}</td><td class="n">{{num .Top1}}</td><td class="n">{{count .Mistakes}}</td><td class="n">{{f3 .Severity}}</td>{{range $t.Heights}}<td class="n">{{$row.At . | count}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{end}}
<h2>Average ranks (top-1)</h2>
{{with .R.Ranks}}
<p class="note">Ranked over {{.N}} blocks ({{blocks .Blocks}}); rank 1 is best.</p>
<table>
<tr><th>Method</th><th>Average rank</th></tr>
{{range $i, $m := .Methods}}<tr><td>{{$m}}</td><td class="n">{{index $.R.Ranks.AvgRanks $i | f3}}</td></tr>
{{end}}</table>
<p>{{summary .}}</p>
{{else}}<p class="note">Not computed: {{.R.RankErr}}.</p>{{end}}
{{if .R.Selected}}
<h2>Selected weights</h2>
<p class="note">Runs with a validation split report the test figures of the weights of their best validation epoch.</p>
<table>
<tr><th>Data set</th><th>DR</th><th>Model</th><th>Method</th><th>Seed</th><th>Epoch</th><th>of</th></tr>
{{range .R.Selected}}<tr><td>{{.Dataset}}</td><td>{{pct .Fraction}}</td><td>{{.Model}}</td><td>{{.Method}}</td><td class="n">{{.Seed}}</td><td class="n">{{.Selected}}</td><td class="n">{{.Trained}}</td></tr>
{{end}}</table>
{{end}}
{{range .R.PairedByMetric}}
<h2>Paired differences in {{(index . 0).Metric.Short}} (method − baseline, paired t-test over seeds)</h2>
<table>
<tr><th>Data set</th><th>DR</th><th>Model</th><th>Method</th><th>vs</th><th>Δ mean</th><th>t</th><th>p</th><th>seeds</th></tr>
{{range .}}<tr{{if sig .P}} class="sig"{{end}}><td>{{.Dataset}}</td><td>{{pct .Fraction}}</td><td>{{.Model}}</td><td>{{.Method}}</td><td>{{.Baseline}}</td><td class="n">{{signed .Diff}}</td><td class="n">{{num .T}}</td><td class="n">{{pval .P}}</td><td class="n">{{.N}}</td></tr>
{{end}}</table>
<p class="note">Shaded rows: p &lt; 0.05 (not corrected for multiple comparisons).</p>
{{end}}
{{if .R.Plots}}<h2>Plots</h2>{{end}}
{{range .R.Plots}}<figure><img src="{{png .PNG}}" alt="{{.Title}}">{{if .Caption}}<figcaption>{{.Title}}</figcaption>{{end}}</figure>
{{end}}
</body>
</html>
`))
