package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/similarity"
)

// pySoft: the package's soft targets of both target files against lcl
// plan's (in float32 ulps), the CSV's values as the package read them, and
// the package's message for every bad file.
const pySoft = `
def soft(d):
    classes, res = d["classes"], {}
    m = lcl.load_target_matrix(d["csv"], classes=classes)
    static = lcl.SoftTargets(m)
    plan = lcl.load_plan(d["plans"]["soft"], classes=classes)
    for e in range(len(plan)):
        res["SoftTargets epoch %d" % e] = ulps(static[e], plan[e])
        res["soft_targets epoch %d" % e] = ulps(lcl.soft_targets(m, e), plan[e])
    m2 = lcl.load_target_matrix(d["npy"], classes=classes, normalize=True)
    annealed = lcl.SoftTargets(m2, anneal=0.9, normalize=True)
    plan = lcl.load_plan(d["plans"]["soft-anneal"], classes=classes)
    for e in range(len(plan)):
        res["SoftTargets anneal 0.9 epoch %d" % e] = ulps(annealed[e], plan[e])
        res["soft_targets anneal 0.9 epoch %d" % e] = ulps(lcl.soft_targets(m2, e, 0.9, normalize=True), plan[e])
    y = torch.tensor([3, 0, 3])
    res["rows"] = float((annealed.rows(y, 2) - annealed[2][y]).abs().max())
    errors = {}
    for name, case in d["bad"].items():
        try:
            lcl.load_target_matrix(case["file"], classes=classes, normalize=case["normalize"])
        except lcl.LCLFileError as e:
            errors[name] = str(e)
        else:
            errors[name] = "(no error)"
    return {"ulps": res, "csv": m.flatten().tolist(), "npy": m2.flatten().tolist(), "errors": errors}
`

// softBad is a target file lcl refuses, and how the package is asked to
// read it.
type softBad struct {
	File      string `json:"file"`
	Normalize bool   `json:"normalize"`
	lcl       string // lcl's message: similarity.ReadTargets's with lcl plan's options
}

// softAnchor is the bad target file newFashionFiles gives lcl plan itself.
const softAnchor = "a row short of 1"

// writeSoftBadFiles writes target files lcl refuses: each spoils valid rows
// (0.55 on the diagonal, 0.05 elsewhere) one way.
func (f *fashionFiles) writeSoftBadFiles(t *testing.T) {
	t.Helper()
	c := len(f.set.Classes)
	dir := filepath.Join(f.dir, "soft-bad")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rows := func(n int, edit func(i, j int) string) string {
		var b strings.Builder
		for i := range n {
			for j := range n {
				if j > 0 {
					b.WriteString(",")
				}
				v := "0.05"
				if i == j {
					v = "0.55"
				}
				if e := edit(i, j); e != "" {
					v = e
				}
				b.WriteString(v)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	none := func(int, int) string { return "" }
	// at puts v at row r, column col (every column: col −1).
	at := func(r, col int, v string) func(i, j int) string {
		return func(i, j int) string {
			if i == r && (col < 0 || j == col) {
				return v
			}
			return ""
		}
	}
	swapped := "class" // lcl store export's header with classes 3 and 4 swapped
	for i := range f.set.Classes {
		k := i
		if i == 3 || i == 4 {
			k = 7 - i
		}
		swapped += "," + f.set.Classes[k].ID
	}
	f.softBad = map[string]*softBad{}
	text := func(name, body string, normalize bool) {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".csv")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		f.softBad[name] = &softBad{File: path, Normalize: normalize}
	}
	text("9 classes", rows(9, none), false)
	text("not finite", "# NaN in row 1\n"+rows(c, at(1, 4, "nan")), false)
	text("negative", rows(c, at(2, 3, "-0.05")), true)
	text("a zero row", rows(c, at(5, -1, "0")), true)
	text(softAnchor, rows(c, at(1, 1, "0.45")), false)
	text("a header in another order", swapped+"\n"+rows(c, none), false)
	eye := make([]float32, c*c)
	for i := range c {
		eye[i*c+i] = 1
	}
	binary := func(name string, data []float32, ids []string) {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".npy")
		if err := npy.WriteFileFloat32(path, c, c, data); err != nil {
			t.Fatal(err)
		}
		if ids != nil {
			if err := os.WriteFile(strings.TrimSuffix(path, ".npy")+".ids.txt", []byte(strings.Join(ids, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f.softBad[name] = &softBad{File: path}
	}
	neg := append([]float32(nil), eye...)
	neg[7*c+2] = -0.25
	binary("npy negative", neg, nil)
	var ids []string
	for _, cl := range f.set.Classes {
		ids = append(ids, cl.ID)
	}
	ids[0], ids[8] = ids[8], ids[0]
	binary("npy ids in another order", eye, ids)
}

// softPart holds the package's soft targets against `lcl plan --strategy
// soft` (the CSV as given; the .npy normalised and annealed with ε 0.9)
// and its refusals of bad target files against lcl's: file, line and
// reason. lcl's message for every bad file is similarity.ReadTargets's with
// the options lcl plan gives it (trainrun's targetFile); that lcl plan
// prints exactly it, after "lcl: --matrix: ", is checked on one of them
// (softAnchor), which newFashionFiles ran through lcl plan: each lcl plan
// starts a plugin process, seconds on a loaded machine.
func softPart(t *testing.T, f *fashionFiles) *pyPart {
	c := len(f.set.Classes)
	bad := f.softBad
	for name, b := range bad {
		_, _, err := similarity.ReadTargets(b.File, similarity.TargetOptions{Set: f.set, Classes: c,
			Tolerance: strategy.TargetSumTolerance, Normalize: b.Normalize})
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: lcl's reader says %v: want one line refusing it", name, err)
		}
		b.lcl = err.Error()
	}
	if want := "lcl: --matrix: " + bad[softAnchor].lcl + "\n"; f.refusedCode != 2 || f.refused != want {
		t.Fatalf("lcl plan --matrix %s: exit %d, %q; want exit 2 and %q", bad[softAnchor].File, f.refusedCode, f.refused, want)
	}
	// The values lcl reads from the two good files.
	read := func(path string) []float32 {
		data, _, err := similarity.ReadTargets(path, similarity.TargetOptions{Set: f.set, Classes: c,
			Tolerance: strategy.TargetSumTolerance, Normalize: true})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	csv, npyData := read(f.softCSV), read(f.softNPY)
	input := map[string]any{"classes": filepath.Join(f.plans["soft"], "classes.txt"), "csv": f.softCSV, "npy": f.softNPY,
		"plans": f.plans, "bad": bad}
	return &pyPart{name: "soft", title: "soft targets and target files as lcl plan", input: input,
		check: func(t *testing.T, raw json.RawMessage) {
			var res struct {
				Ulps     map[string]float64
				CSV, NPY []float64
				Errors   map[string]string
			}
			decode(t, raw, &res)
			worst := 0.0
			for name, v := range res.Ulps {
				if name == "rows" {
					if v != 0 {
						t.Errorf("SoftTargets.rows differs from the matrix's rows by %g", v)
					}
					continue
				}
				worst = math.Max(worst, v)
				if v > 1 {
					t.Errorf("%s: the package's targets differ from lcl plan's by %g float32 ulps", name, v)
				}
			}
			if want := 2*2 + 2*4 + 1; len(res.Ulps) != want {
				t.Errorf("%d figures, want %d: %v", len(res.Ulps), want, res.Ulps)
			}
			for _, m := range []struct {
				name string
				got  []float64
				want []float32
			}{{"soft.csv", res.CSV, csv}, {"soft.npy", res.NPY, npyData}} {
				same := len(m.got) == len(m.want)
				for i := range min(len(m.got), len(m.want)) {
					same = same && m.got[i] == float64(m.want[i])
				}
				if !same {
					t.Errorf("%s: the package read %v, lcl %v", m.name, m.got, m.want)
				}
			}
			t.Logf("%d target matrices, at most %g float32 ulps from lcl plan's", len(res.Ulps)-1, worst)
			for name, b := range bad {
				got, ok := res.Errors[name]
				if !ok {
					t.Errorf("%s: no result", name)
					continue
				}
				// Where lcl names its label set or flag the package names the
				// model and its argument: otherwise the same line.
				want := strings.NewReplacer("label set fashion-mnist has", "the model has",
					"of fashion-mnist", "of the model", "--param normalize=true", "normalize=True").Replace(b.lcl)
				if got != want {
					t.Errorf("%s: the package says\n\t%s\nlcl says\n\t%s", name, got, b.lcl)
				}
				t.Logf("%s: %s", name, got)
			}
		}}
}
