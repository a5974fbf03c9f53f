package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcl-project/lcl/experiment/trainrun"
	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/torch"
	"github.com/lcl-project/lcl/wordnet"
)

// The Python package (python/, imported as lcl; docs/python.md) is an
// independent re-implementation of the published formulas for PyTorch
// users' own loops. TestPythonPackage holds it against the engine on the
// demo's classes (Fashion-MNIST) with Debian's python3-torch:
//
//   - targets: lcl.lcl_targets, label_smoothing_targets, mbm_soft_labels,
//     the OLS module's first targets, HXE's tree size and the lca height
//     form's similarity (from its own WordNet reader) equal the files of
//     `lcl plan`, `lcl store export` and curriculum.csv to float32
//     precision (at most 1 ulp), and its loaders read them with their
//     class checks;
//   - errors: a plan of another label set, a matrix of the wrong size and
//     classes in another order fail in one line naming the file;
//   - losses: soft_target_cross_entropy (LCL, LS, MBM targets; weighted;
//     mixup and CutMix of soft targets), HXELoss (on the similarity's tree
//     and on WordNet's heights; mixed) and OnlineLabelSmoothing (two
//     epochs, its statistics included) give the loss and the gradient of
//     one engine training step (torch.Engine.Train, the step lcl train
//     runs) on fixed logits: a linear model whose input is the identity,
//     so its logits are its weights, and SGD at learning rate 1, so the
//     gradient is the weights' change;
//   - soft: load_target_matrix reads soft's CSV and .npy files to lcl's
//     values, SoftTargets equals lcl plan --strategy soft (as given;
//     annealed), and bad target files are refused with lcl's line
//     (softPart);
//   - haframe: HAFrame's S, s_min and cosines equal the strategy's, and
//     HAFrameLoss one engine step's with the head fixed to the frame
//     (haframePart);
//   - haf: haf_levels equal strategy.HAFLevels, and HAFLoss one engine
//     step's of a model with level heads, every parameter's gradient
//     (hafPart);
//   - metrics: mistake severity, hier. dist@1/5/20 and CRM's (top-1 and
//     the same figures) equal trainer.EvaluateOn's (what lcl eval runs,
//     with the cost matrix lcl eval --crm builds) on the same logits, and
//     lcl's WordNet LCA heights equal the engine's cost matrix.
//
// A missing python3-torch fails (make deps installs it).
func TestPythonPackage(t *testing.T) {
	needWordNet(t)
	pkg, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	// lcl's invocations run in the background while Python is looked for
	// (importing torch once) and started. One Python process computes every
	// part's figures: it imports torch (seconds) while the engine's side is
	// prepared, then reads every part's input from its standard input.
	f := newFashionFiles(t)
	py := testdep.PythonModules(t, "torch", "numpy")
	proc := startPython(t, py, pyPrelude+pyTargets+pyErrors+pySoft+pyLosses+pyHAFrame+pyHAF+pyMetrics+pyMain, pkg)
	f.wait(t)
	parts := []*pyPart{targetsPart(f), errorsPart(t, f), softPart(t, f), lossesPart(t, f), haframePart(t, f), hafPart(t, f),
		metricsPart(t, f)}
	in := map[string]any{}
	for _, p := range parts {
		in[p.name] = p.input
	}
	res := proc.finish(t, in)
	for _, p := range parts {
		t.Run(p.title, func(t *testing.T) {
			var failed struct{ Error string }
			if json.Unmarshal(res[p.name], &failed) == nil && failed.Error != "" {
				t.Fatalf("python failed: %s", failed.Error)
			}
			p.check(t, res[p.name])
		})
	}
}

// pyProcess is the running Python process of TestPythonPackage.
type pyProcess struct {
	cmd           *exec.Cmd
	stdin         io.WriteCloser
	stdout        strings.Builder
	stderr        strings.Builder
	start, inputs time.Time
}

// startPython starts script (python3 -I -c script pkg) with a pipe for its
// input; the test's cleanup kills it if the test ends before finish.
func startPython(t *testing.T, py *testdep.Py, script, pkg string) *pyProcess {
	t.Helper()
	p := &pyProcess{cmd: py.Command("-c", script, pkg), start: time.Now()}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("python: %v", err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// finish sends the parts' inputs and returns every part's figures.
func (p *pyProcess) finish(t *testing.T, in map[string]any) map[string]json.RawMessage {
	t.Helper()
	p.inputs = time.Now()
	err := json.NewEncoder(p.stdin).Encode(in)
	if cerr := p.stdin.Close(); err == nil {
		err = cerr
	}
	if werr := p.cmd.Wait(); werr != nil || err != nil {
		t.Fatalf("python: %v %v\n%s%s", err, werr, p.stdout.String(), p.stderr.String())
	}
	t.Logf("python: %v from its start, %v after its input", time.Since(p.start).Round(time.Millisecond),
		time.Since(p.inputs).Round(time.Millisecond))
	var res map[string]json.RawMessage
	if err := json.Unmarshal([]byte(p.stdout.String()), &res); err != nil {
		t.Fatalf("python printed %q: %v", p.stdout.String(), err)
	}
	return res
}

// pyPart is one part of TestPythonPackage: its input for the Python
// function its script defines (def NAME(d): returning the JSON of its
// figures; the scripts are joined in TestPythonPackage), and the check of
// those figures.
type pyPart struct {
	name, title string
	input       any
	check       func(t *testing.T, res json.RawMessage)
}

// decode decodes a part's figures into v.
func decode(t *testing.T, res json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(res, v); err != nil {
		t.Fatalf("python's figures %s: %v", res, err)
	}
}

// fashionFiles are what lcl writes for the demo's classes: the lca
// source's two forms exported from the store, the wnids, and plans.
type fashionFiles struct {
	dir     string
	set     *labels.Set
	classes []string // the model's class names, torchvision's FashionMNIST.classes
	wup     string   // lcl similarity --source lca (Wu–Palmer), exported .npy
	height  string   // lcl similarity --source lca --form height, exported .npy
	synsets string   // lcl synsets fashion-mnist --json
	plans   map[string]string
	other   string // a plan of another label set (cifar100)
	softCSV string // soft's target matrix as CSV: a comment, a header of ids, rows labelled by name
	softNPY string // soft's target matrix as float32 .npy (rows not summing to 1) with FILE.ids.txt
	softBad map[string]*softBad

	// The background lcl invocations (newFashionFiles, wait).
	start       time.Time
	jobs        sync.WaitGroup
	sem         chan struct{}
	mu          sync.Mutex
	errs        []string
	took        []string // "NAME 1.2s" of every invocation, in the order they ended
	refusedCode int      // lcl plan's exit code for softBad[softAnchor]
	refused     string   // and its standard error
}

// planArgs are the plans the tests compare: strategy and parameters.
var planArgs = map[string][]string{
	"lcl":      {"--strategy", "lcl", "--epsilon", "0.9", "--epochs", "6", "--matrix", "WUP"},
	"ls":       {"--strategy", "ls", "--epochs", "1"},
	"mbm-soft": {"--strategy", "mbm-soft", "--epochs", "1", "--matrix", "HEIGHT"},
	"hxe":      {"--strategy", "hxe", "--epochs", "1", "--matrix", "HEIGHT"},
	"ols":      {"--strategy", "ols", "--epochs", "1"},
	"soft":     {"--strategy", "soft", "--epochs", "2", "--matrix", "SOFTCSV"},
	"soft-anneal": {"--strategy", "soft", "--epochs", "4", "--matrix", "SOFTNPY",
		"--param", "anneal=0.9", "--param", "normalize=true"},
}

// newFashionFiles writes the test's own input files and starts the lcl
// invocations that write the rest (similarity, store export, synsets,
// plans) in the background, at most lclJobs at a time; wait waits for them.
// Every invocation of lcl starts its strategy's plugin process, the test
// binary itself (libtorch linked in: a second or more to start on a
// loaded machine), so beside one another they take a fraction of the time
// they take one after the other.
func newFashionFiles(t *testing.T) *fashionFiles {
	t.Helper()
	dir := t.TempDir()
	set, err := labels.Builtin("fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	f := &fashionFiles{dir: dir, set: set, plans: map[string]string{}, start: time.Now(), sem: make(chan struct{}, lclJobs)}
	for _, c := range set.Classes {
		f.classes = append(f.classes, c.Name)
	}
	f.writeSoftFiles(t)
	f.writeSoftBadFiles(t)
	f.wup, f.height = filepath.Join(dir, "wup.npy"), filepath.Join(dir, "height.npy")
	f.synsets = filepath.Join(dir, "synsets.jsonl")
	f.other = filepath.Join(dir, "plan-cifar100")
	for name := range planArgs {
		f.plans[name] = filepath.Join(dir, "plan-"+name)
	}
	// The background jobs touch the temporary folder: the test's end waits
	// for them (cleanups run last registered first, TempDir's after this).
	t.Cleanup(f.jobs.Wait)
	plan := func(name string) {
		a := []string{"plan", "--synsets", "fashion-mnist", "--out", f.plans[name]}
		for _, v := range planArgs[name] {
			a = append(a, strings.NewReplacer("WUP", f.wup, "HEIGHT", f.height, "SOFTCSV", f.softCSV, "SOFTNPY", f.softNPY).Replace(v))
		}
		f.lcl(name, a...)
	}
	// The similarities share one store, one after the other; the plans of
	// them follow. Each waits for the store: the one before has closed it,
	// but a plugin process forked beside it (another job's) holds a copy of
	// its lock until that child executes (seen under strace).
	f.job(func() {
		store := filepath.Join(dir, "store")
		export := func(name, path string, args ...string) bool {
			var res struct{ Key string }
			out, ok := f.lcl(name, append([]string{"--store", store, "--store-wait", "1m", "--json", "similarity", "--synsets", "fashion-mnist", "--source", "lca"}, args...)...)
			if ok && (json.Unmarshal([]byte(out), &res) != nil || res.Key == "") {
				f.fail("lcl similarity --json printed %q", out)
				return false
			}
			_, ok2 := f.lcl(name+" export", "--store", store, "--store-wait", "1m", "store", "export", res.Key, "-o", path)
			return ok && ok2
		}
		if export("wup", f.wup) {
			f.job(func() { plan("lcl") })
		}
		if export("height", f.height, "--form", "height") {
			f.job(func() { plan("mbm-soft") })
			f.job(func() { plan("hxe") })
		}
		if out, ok := f.lcl("synsets", "--json", "synsets", "fashion-mnist"); ok {
			if err := os.WriteFile(f.synsets, []byte(out), 0o644); err != nil {
				f.fail("%v", err)
			}
		}
	})
	// The longest first (two plugin processes: a parameter is tried first).
	f.job(func() { plan("soft-anneal") })
	for name := range planArgs {
		if !slices.Contains([]string{"lcl", "mbm-soft", "hxe", "soft-anneal"}, name) {
			f.job(func() { plan(name) })
		}
	}
	f.job(func() {
		f.lcl("cifar100", "plan", "--strategy", "ls", "--synsets", "cifar100", "--epochs", "1", "--out", f.other)
	})
	// One bad target file through lcl plan itself: its message is
	// similarity.ReadTargets's, which softPart reads for every bad file.
	f.job(func() {
		b := f.softBad[softAnchor]
		code, _, errs := runLCLBeside(context.Background(), "--store", filepath.Join(dir, "store-refused"), "plan",
			"--strategy", "soft", "--synsets", "fashion-mnist", "--matrix", b.File, "--epochs", "1",
			"--out", filepath.Join(dir, "plan-refused"))
		f.mu.Lock()
		f.refusedCode, f.refused = code, errs
		f.mu.Unlock()
	})
	return f
}

// lclJobs is how many lcl invocations newFashionFiles runs at once.
const lclJobs = 4

// job runs fn in the background, at most lclJobs at a time.
func (f *fashionFiles) job(fn func()) {
	f.jobs.Add(1)
	go func() {
		defer f.jobs.Done()
		f.sem <- struct{}{}
		defer func() { <-f.sem }()
		fn()
	}()
}

// fail records a background job's failure for wait to report.
func (f *fashionFiles) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// lcl runs lcl (runLCLBeside) as the job named name; a failure is recorded.
func (f *fashionFiles) lcl(name string, args ...string) (string, bool) {
	if !slices.Contains(args, "--store") {
		args = append([]string{"--store", filepath.Join(f.dir, "store-"+strings.ReplaceAll(name, " ", "-"))}, args...)
	}
	t0 := time.Now()
	code, out, errs := runLCLBeside(context.Background(), args...)
	f.mu.Lock()
	f.took = append(f.took, fmt.Sprintf("%s %.1fs", name, time.Since(t0).Seconds()))
	f.mu.Unlock()
	if code != 0 {
		f.fail("lcl %s: exit %d: %s", strings.Join(args, " "), code, errs)
		return out, false
	}
	return out, true
}

// wait waits for the background jobs and fails the test with theirs.
func (f *fashionFiles) wait(t *testing.T) {
	t.Helper()
	f.jobs.Wait()
	if len(f.errs) > 0 {
		t.Fatalf("%d of lcl's invocations failed:\n%s", len(f.errs), strings.Join(f.errs, "\n"))
	}
	t.Logf("lcl similarity, store export, synsets and %d plans, %d at a time: %v (%s)", len(f.plans)+2, lclJobs,
		time.Since(f.start).Round(time.Millisecond), strings.Join(f.took, ", "))
}

// runLCLBeside runs lcl in-process as Run does, but without Run's
// process-wide plugins.Cleanup (which would stop the plugins of the
// invocations running beside it: each command's host stops its own) and
// signal handling: the test's invocations run side by side.
func runLCLBeside(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb}}
	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	err := root.ExecuteContext(ctx)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		printError(&errb, err)
	}
	return exitCode(err), out.String(), errb.String()
}

// writeSoftFiles writes soft's two target files: random distributions,
// typed with 4 decimals in the CSV (so rows sum to 1 within 0.0005), and
// positive values summing to about C/2 in the .npy (normalize=true).
func (f *fashionFiles) writeSoftFiles(t *testing.T) {
	t.Helper()
	c := len(f.set.Classes)
	r := rand.New(rand.NewPCG(70, 71))
	var b strings.Builder
	b.WriteString("# soft targets for fashion-mnist, row y the target of class y\nclass")
	for _, cl := range f.set.Classes {
		b.WriteString("," + cl.ID)
	}
	b.WriteString("\n")
	for i, cl := range f.set.Classes {
		row, sum := make([]float64, c), 0.0
		for j := range row {
			row[j] = r.Float64()
			if i == j {
				row[j] += 3
			}
			sum += row[j]
		}
		b.WriteString(cl.Name)
		for _, v := range row {
			fmt.Fprintf(&b, ",%.4f", v/sum)
		}
		b.WriteString("\n")
	}
	f.softCSV = filepath.Join(f.dir, "soft.csv")
	data, ids := make([]float32, c*c), ""
	for i, cl := range f.set.Classes {
		for j := range c {
			data[i*c+j] = float32(r.Float64())
		}
		ids += cl.ID + "\n"
	}
	f.softNPY = filepath.Join(f.dir, "soft.npy")
	if err := os.WriteFile(f.softCSV, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFileFloat32(f.softNPY, c, c, data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(f.softNPY, ".npy")+".ids.txt", []byte(ids), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pyPrelude: sys.argv[1] is python/; the input comes on standard input.
const pyPrelude = `
import json, os, sys, traceback
sys.path.insert(0, sys.argv[1])
import numpy as np
import torch
import torch.nn.functional as F
import lcl
torch.set_num_threads(1)
`

// pyMain runs every part's function on its input; a part that raises
// reports its traceback instead of its figures.
const pyMain = `
inputs, out = json.load(sys.stdin), {}
for name, d in inputs.items():
    try:
        out[name] = globals()[name](d)
    except Exception:
        out[name] = {"error": traceback.format_exc()}
print(json.dumps(out))
`

// pyTargets computes, per plan and epoch, the largest difference in float32
// ulps between the package's targets and the plan's file, after loading
// both with the model's classes checked.
const pyTargets = `
def ulps(a, b):
    a, b = a.double(), b.double()
    # one float32 ulp of b: 2^(e−24) for |b| in [2^(e−1), 2^e)
    ulp = torch.ldexp(torch.ones_like(b), torch.frexp(b.abs().float()).exponent.long() - 24)
    return float(((a - b).abs() / ulp.double()).max())

def targets(d):
    classes, res = d["classes"], {}
    wup = lcl.load_matrix(d["wup"], classes=classes)
    height = lcl.load_matrix(d["height"], classes=classes)
    def check(name, plan, make):
        plan = lcl.load_plan(plan, classes=classes)
        for e in range(len(plan)):
            res["%s epoch %d" % (name, e)] = ulps(make(e).float(), plan[e])
    check("lcl_targets", d["plans"]["lcl"], lambda e: lcl.lcl_targets(wup, 0.9, e))
    provider = lcl.LCLTargets(wup, 0.9)
    check("LCLTargets", d["plans"]["lcl"], lambda e: provider[e])
    steps = [lcl.lcl_initial(wup)]
    for _ in range(5):
        steps.append(lcl.lcl_step(steps[-1], 0.9))
    check("lcl_step", d["plans"]["lcl"], lambda e: steps[e])
    check("ls", d["plans"]["ls"], lambda e: lcl.label_smoothing_targets(10, 0.1))
    check("mbm-soft", d["plans"]["mbm-soft"], lambda e: lcl.mbm_soft_labels(lcl.distance_from_similarity(height), 10))
    check("hxe", d["plans"]["hxe"], lambda e: lcl.one_hot_targets(10))
    check("ols", d["plans"]["ols"], lambda e: lcl.OnlineLabelSmoothing(10).targets)
    res["hxe nodes"] = lcl.HXELoss(lcl.distance_from_similarity(height), 0.1).num_nodes
    res["hxe group coefficient"] = lcl.load_plan(d["plans"]["hxe"]).coefs(0)["group"]
    wn = lcl.wordnet_hierarchy([s.wnid for s in lcl.load_synsets(d["synsets"])])
    res["lca height similarity epoch -"] = ulps(wn.similarity(), height)
    res["heights from the similarity"] = float((lcl.lca_heights_from_similarity(height, wn.max_height) - wn.lca).abs().max())
    return res
`

func targetsPart(f *fashionFiles) *pyPart {
	return &pyPart{name: "targets", title: "targets equal lcl plan",
		input: map[string]any{"classes": f.classes, "wup": f.wup, "height": f.height, "plans": f.plans, "synsets": f.synsets},
		check: func(t *testing.T, raw json.RawMessage) {
			var res map[string]float64
			decode(t, raw, &res)
			epochs, worst := 0, 0.0
			for name, v := range res {
				switch {
				case strings.HasPrefix(name, "hxe n"), strings.HasPrefix(name, "hxe g"):
				case name == "heights from the similarity":
					if v != 0 {
						t.Errorf("%s: the heights differ by %g", name, v)
					}
				default:
					epochs, worst = epochs+1, max(worst, v)
					if v > 1 {
						t.Errorf("%s: the package's targets differ from lcl's file by %g float32 ulps", name, v)
					}
				}
			}
			if res["hxe nodes"] != res["hxe group coefficient"] || res["hxe nodes"] < 11 {
				t.Errorf("hxe: the package's tree has %v nodes, lcl plan's group coefficient is %v", res["hxe nodes"], res["hxe group coefficient"])
			}
			if want := 3*6 + 4 + 1; epochs != want {
				t.Errorf("%d matrices compared, want %d: %v", epochs, want, res)
			}
			t.Logf("%d target matrices, at most %g float32 ulps from lcl's files; hxe's tree: %v nodes", epochs, worst, res["hxe nodes"])
		}}
}

// pyErrors collects the message of every refusal it provokes.
const pyErrors = `
def errors(d):
    import shutil
    classes, out = d["classes"], {}
    def expect(name, f):
        try:
            f()
        except lcl.LCLFileError as e:
            out[name] = str(e)
        else:
            out[name] = "(no error)"
    swapped = list(classes)
    swapped[3], swapped[4] = swapped[4], swapped[3]
    expect("other label set", lambda: lcl.load_plan(d["other"], classes=classes))
    bad = os.path.join(d["tmp"], "nine.npy")
    np.save(bad, np.eye(9, dtype=np.float32))
    expect("wrong size", lambda: lcl.load_matrix(bad, classes=classes))
    expect("another order", lambda: lcl.load_plan(d["plan"], classes=swapped))
    moved = os.path.join(d["tmp"], "moved.npy")
    shutil.copy(d["height"], moved)
    ids = open(d["height"][:-4] + ".ids.txt").read().split("\n")
    ids[0], ids[8] = ids[8], ids[0]
    open(moved[:-4] + ".ids.txt", "w").write("\n".join(ids))
    expect("export in another order", lambda: lcl.load_matrix(moved, classes=classes))
    expect("epoch not planned", lambda: lcl.load_plan(d["plan"])[99])
    return out
`

func errorsPart(t *testing.T, f *fashionFiles) *pyPart {
	tmp := filepath.Join(f.dir, "errors")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	return &pyPart{name: "errors", title: "errors name the file",
		input: map[string]any{"classes": f.classes, "other": f.other, "tmp": tmp, "plan": f.plans["lcl"], "height": f.height},
		check: func(t *testing.T, raw json.RawMessage) {
			var res map[string]string
			decode(t, raw, &res)
			for name, want := range map[string][]string{
				"other label set":         {filepath.Join(f.other, "classes.txt") + ": 100 classes, want 10"},
				"wrong size":              {filepath.Join(tmp, "nine.npy") + ": matrix is 9×9, want 10×10"},
				"another order":           {filepath.Join(f.plans["lcl"], "classes.txt") + ": classes in another order: row 3 is Dress, which the model has at 4"},
				"export in another order": {filepath.Join(tmp, "moved.ids.txt") + ": classes in another order: row 0 is Bag"},
				"epoch not planned":       {f.plans["lcl"] + ": epoch 99 is not planned", "--epochs 6"},
			} {
				msg, ok := res[name]
				if !ok {
					t.Errorf("%s: no result", name)
					continue
				}
				if strings.Contains(msg, "\n") {
					t.Errorf("%s: the message has several lines: %q", name, msg)
				}
				for _, w := range want {
					if !strings.Contains(msg, w) {
						t.Errorf("%s: %q, want it to say %q", name, msg, w)
					}
				}
				t.Logf("%s: %s", name, msg)
			}
		}}
}

// readPlan is the float32 targets of a plan's epoch file.
func readPlan(t *testing.T, dir string, epoch int) []float32 {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, fmt.Sprintf("epoch-%03d.npy", epoch)))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	_, _, data, err := npy.Read32(fh)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readMatrix reads an exported C×C .npy as the strategies take it.
func readMatrix(t *testing.T, path string) *sdk.Matrix {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r, c, data, err := npy.Read32(io.Reader(fh))
	if err != nil {
		t.Fatal(err)
	}
	m := sdk.NewMatrix(r, c)
	copy(m.Data, data)
	return m
}

// linearStep is one engine training step (SGD, learning rate 1, no
// momentum or weight decay) of a linear model on inputs of 1×H×W: its
// logits are x·Wᵀ + b, with b starting at 0.
type linearStep struct {
	classes, h, w int
	w0            []float32 // classes × h·w
	x             []float32 // n × h·w
	y             []int64
	weights       []float32
	targets       []float32 // classes², nil: none
	groups        *sdk.Groups
	coefs         torch.Coefs
	mix           *torch.Mix
	classProbs    bool
	layer         string // the layer whose gradient is taken; "" is the head, fc
}

// stepResult is what a step gave: the batch loss, the gradients (the
// parameters' change), the weights after it, and with classProbs the
// engine's class probabilities.
type stepResult struct {
	Loss     float64
	GW, GB   []float64
	W1, B1   []float32
	sums     []float64
	counts   []int64
	targets1 []float32
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesf32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func linearModel(t *testing.T, classes, h, w int, weight, bias []float32) *torch.Model {
	t.Helper()
	d := h * w
	spec := torch.Spec{InC: 1, InH: h, InW: w, NumClasses: classes, Features: torch.Seq("", torch.Flatten()),
		Head: torch.Seq("", torch.Linear("fc", d, classes))}
	m, err := torch.NewModel(spec, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if bias == nil {
		bias = make([]float32, classes)
	}
	err = m.State().Load(map[string]torch.Named{
		"fc.weight": {Name: "fc.weight", DType: torch.Float32, Shape: []int64{int64(classes), int64(d)}, Data: f32bytes(weight)},
		"fc.bias":   {Name: "fc.bias", DType: torch.Float32, Shape: []int64{int64(classes)}, Data: f32bytes(bias)},
	})
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return m
}

// modelParams are the weight and bias of the model's linear layer named
// layer.
func modelParams(t *testing.T, m *torch.Model, layer string) (w, b []float32) {
	t.Helper()
	st, err := m.State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		switch s.Name {
		case layer + ".weight":
			w = bytesf32(s.Data)
		case layer + ".bias":
			b = bytesf32(s.Data)
		}
	}
	return w, b
}

func (s linearStep) run(t *testing.T, m *torch.Model) stepResult {
	t.Helper()
	layer := cmp.Or(s.layer, "fc")
	w0, b0 := modelParams(t, m, layer)
	o, err := torch.NewSGD(m, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	e, err := torch.NewEngine("cpu", torch.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	step := &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Coefs: s.coefs, LR: 1, Mix: s.mix,
		ClassProbs: s.classProbs}
	c := s.classes
	if s.targets != nil {
		tt, err := torch.NewTensor(s.targets, []int64{int64(c), int64(c)}, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		defer tt.Close()
		step.Targets = tt
	}
	if g := s.groups; g != nil {
		// As the trainer passes a plan's groups (trainer/epoch.go): G×C
		// membership, C×G weights, float32.
		G := len(g.Members)
		mm, ww := make([]float32, G*c), make([]float32, c*G)
		for gi, cs := range g.Members {
			for _, k := range cs {
				mm[gi*c+k] = 1
			}
		}
		for _, gw := range g.Weights {
			ww[gw.Class*G+gw.Group] = float32(gw.W)
		}
		mt, err := torch.NewTensor(mm, []int64{int64(G), int64(c)}, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		defer mt.Close()
		wt, err := torch.NewTensor(ww, []int64{int64(c), int64(G)}, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		defer wt.Close()
		step.Groups = &torch.Groups{Members: mt, Weights: wt}
	}
	n := len(s.y)
	if err := e.Put(torch.Input{N: n, C: 1, H: s.h, W: s.w, X: s.x, Y: s.y, Weights: s.weights}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Train(step, 0); err != nil {
		t.Fatal(err)
	}
	met, err := e.Metrics(1)
	if err != nil {
		t.Fatal(err)
	}
	r := stepResult{Loss: met.LossSum[0] / float64(met.N)}
	r.W1, r.B1 = modelParams(t, m, layer)
	for i := range w0 {
		r.GW = append(r.GW, float64(w0[i])-float64(r.W1[i]))
	}
	for i := range b0 {
		r.GB = append(r.GB, float64(b0[i])-float64(r.B1[i]))
	}
	if s.classProbs {
		if r.sums, r.counts, err = e.ClassProbs(c); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// pyLosses computes every case's loss and gradients with the package (the
// case's targets made by the package itself), and for OLS the targets of
// its second epoch and that epoch's step from the engine's weights.
const pyLosses = `
def losses(d):
    C = 10
    wup = lcl.load_matrix(d["wup"])
    height = lcl.load_matrix(d["height"])
    heights = lcl.wordnet_lca_heights([s.wnid for s in lcl.load_synsets(d["synsets"])])
    def targets(spec):
        k = spec["kind"]
        if k == "lcl":
            return lcl.lcl_targets(wup, spec["epsilon"], spec["epoch"])
        if k == "ls":
            return lcl.label_smoothing_targets(C, spec["alpha"])
        if k == "mbm-soft":
            return lcl.mbm_soft_labels(lcl.distance_from_similarity(height), spec["beta"])
        raise ValueError(k)
    out = {}
    for case in d["cases"]:
        n, h, w = len(case["y"]), case["h"], case["w"]
        x = torch.tensor(case["x"], dtype=torch.float32).reshape(n, 1, h, w)
        y = torch.tensor(case["y"])
        wts = torch.tensor(case["weights"], dtype=torch.float32) if case.get("weights") else None
        def linear(w0, b0):
            W = torch.tensor(w0, dtype=torch.float32).reshape(C, h * w).requires_grad_()
            b = torch.tensor(b0, dtype=torch.float32).requires_grad_()
            return W, b, lambda inp: inp.flatten(1) @ W.t() + b
        W, b, model = linear(case["w0"], [0.0] * C)
        mix = case.get("mix")
        res = {}
        if case["loss"] == "soft":
            t, xx = targets(case["targets"])[y], x
            if mix and mix.get("box"):
                xx, t, lam = lcl.cutmix(x, t, lcl.Box(*mix["box"]))
                res["lam"] = lam
            elif mix:
                xx, t = lcl.mixup(x, t, mix["lam"])
            loss = lcl.soft_target_cross_entropy(model(xx), t, weights=wts)
        elif case["loss"] == "hxe":
            dist = heights if case["tree"] == "wordnet" else lcl.distance_from_similarity(height)
            crit = lcl.HXELoss(dist, case.get("alpha", 0.0))
            target, xx = y, x
            if mix:
                xx, target = lcl.mixup(x, F.one_hot(y, C).double(), mix["lam"])
            loss = crit(model(xx), target)
        elif case["loss"] == "ols":
            ols = lcl.OnlineLabelSmoothing(C, case["alpha"], case["smoothing"])
            loss = ols(model(x), y)
            res["targets1"] = ols.next_epoch().flatten().tolist()
            W2, b2, model2 = linear(case["w1"], case["b1"])
            loss2 = ols(model2(x), y)
            loss2.backward()
            res.update(loss2=loss2.item(), gW2=W2.grad.flatten().tolist(), gb2=b2.grad.tolist())
        loss.backward()
        res.update(loss=loss.item(), gW=W.grad.flatten().tolist(), gb=b.grad.tolist())
        out[case["name"]] = res
    return out
`

// lossCase is one engine step and what the package is told to compute.
type lossCase struct {
	Name    string         `json:"name"`
	Loss    string         `json:"loss"`
	Targets map[string]any `json:"targets,omitempty"`
	Tree    string         `json:"tree,omitempty"`
	Alpha   float64        `json:"alpha,omitempty"`
	Smooth  float64        `json:"smoothing,omitempty"`
	Mix     map[string]any `json:"mix,omitempty"`
	H       int            `json:"h"`
	W       int            `json:"w"`
	X       []float32      `json:"x"`
	Y       []int64        `json:"y"`
	Weights []float32      `json:"weights,omitempty"`
	W0      []float32      `json:"w0"`
	W1      []float32      `json:"w1,omitempty"`
	B1      []float32      `json:"b1,omitempty"`
	step    linearStep
	res     stepResult
	res2    stepResult
}

func lossesPart(t *testing.T, f *fashionFiles) *pyPart {
	const c, n = 10, 12
	r := rand.New(rand.NewPCG(50, 51))
	// Fixed logits: column i of W0 is example i's (the input is the
	// identity), N(0, 2²) with the true class raised on half the examples.
	y := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 8}
	w0 := make([]float32, c*n)
	for i := range w0 {
		w0[i] = float32(2 * r.NormFloat64())
	}
	for i := 0; i < n; i += 2 {
		w0[int(y[i])*n+i] += 3
	}
	eye := make([]float32, n*n)
	for i := range n {
		eye[i*n+i] = 1
	}
	weights := make([]float32, n)
	for i := range weights {
		weights[i] = float32(r.IntN(4)) / 2
	}
	height := readMatrix(t, f.height)
	tree, err := strategy.LinkageTree(height, c)
	if err != nil {
		t.Fatal(err)
	}
	hxe := func(alpha float64) (*sdk.Groups, torch.Coefs) {
		return tree.HXEGroups(alpha), torch.Coefs{Group: float64(len(tree.Parent))}
	}
	soft := torch.Coefs{SoftCE: 1}
	const cutLam = 1 - 4.0/12
	var cases []*lossCase
	add := func(lc *lossCase) {
		if lc.H == 0 {
			lc.H, lc.W = 1, n
		}
		if lc.X == nil {
			lc.X = eye
		}
		lc.Y, lc.W0 = y, w0
		lc.step.classes, lc.step.h, lc.step.w, lc.step.w0, lc.step.x, lc.step.y = c, lc.H, lc.W, w0, lc.X, y
		lc.step.weights = lc.Weights
		cases = append(cases, lc)
	}
	for _, tc := range []struct {
		name, plan string
		epoch      int
		targets    map[string]any
	}{
		{"lcl ε 0.9 epoch 0", "lcl", 0, map[string]any{"kind": "lcl", "epsilon": 0.9, "epoch": 0}},
		{"lcl ε 0.9 epoch 3", "lcl", 3, map[string]any{"kind": "lcl", "epsilon": 0.9, "epoch": 3}},
		{"lcl ε 0.9 epoch 5", "lcl", 5, map[string]any{"kind": "lcl", "epsilon": 0.9, "epoch": 5}},
		{"ls α 0.1", "ls", 0, map[string]any{"kind": "ls", "alpha": 0.1}},
		{"mbm-soft β 10", "mbm-soft", 0, map[string]any{"kind": "mbm-soft", "beta": 10.0}},
	} {
		add(&lossCase{Name: tc.name, Loss: "soft", Targets: tc.targets,
			step: linearStep{targets: readPlan(t, f.plans[tc.plan], tc.epoch), coefs: soft}})
	}
	lclT := map[string]any{"kind": "lcl", "epsilon": 0.9, "epoch": 1}
	add(&lossCase{Name: "lcl weighted examples", Loss: "soft", Targets: lclT, Weights: weights,
		step: linearStep{targets: readPlan(t, f.plans["lcl"], 1), coefs: soft}})
	add(&lossCase{Name: "lcl mixup λ 0.7", Loss: "soft", Targets: lclT, Mix: map[string]any{"lam": 0.7},
		step: linearStep{targets: readPlan(t, f.plans["lcl"], 1), coefs: soft, mix: &torch.Mix{Lam: 0.7}}})
	// CutMix on 3×4 "images" (the identity's rows): a 2×2 box.
	add(&lossCase{Name: "mbm-soft CutMix", Loss: "soft", Targets: map[string]any{"kind": "mbm-soft", "beta": 10.0},
		H: 3, W: 4, Mix: map[string]any{"box": []int{1, 3, 1, 3}},
		step: linearStep{targets: readPlan(t, f.plans["mbm-soft"], 0), coefs: soft, mix: &torch.Mix{Lam: cutLam, Y0: 1, Y1: 3, X0: 1, X1: 3}}})
	for _, tc := range []struct {
		name, tree string
		alpha      float64
		mix        *torch.Mix
	}{
		{"hxe α 0.1", "similarity", 0.1, nil},
		{"hxe α 0.5, WordNet's heights", "wordnet", 0.5, nil},
		{"hxe α 0 (cross-entropy)", "similarity", 0, nil},
		{"hxe α 0.1 mixup λ 0.6", "similarity", 0.1, &torch.Mix{Lam: 0.6}},
	} {
		g, co := hxe(tc.alpha)
		lc := &lossCase{Name: tc.name, Loss: "hxe", Tree: tc.tree, Alpha: tc.alpha, step: linearStep{groups: g, coefs: co, mix: tc.mix}}
		if tc.mix != nil {
			lc.Mix = map[string]any{"lam": tc.mix.Lam}
		}
		add(lc)
	}
	ols := &lossCase{Name: "ols α 0.5", Loss: "ols", Alpha: 0.5, Smooth: 0.1,
		step: linearStep{targets: readPlan(t, f.plans["ols"], 0), coefs: torch.Coefs{HardCE: 0.5, SoftCE: 0.5}, classProbs: true}}
	add(ols)

	start := time.Now()
	for _, lc := range cases {
		m := linearModel(t, c, lc.H, lc.W, w0, nil)
		lc.res = lc.step.run(t, m)
		if lc.Loss == "ols" {
			// The second epoch: the strategy's targets from the engine's
			// statistics, a step from the weights the first left.
			lc.res.targets1 = strategy.OLSTargets(lc.res.sums, lc.res.counts).Dense().Data
			lc.W1, lc.B1 = lc.res.W1, lc.res.B1
			s2 := lc.step
			s2.targets, s2.classProbs = lc.res.targets1, false
			lc.res2 = s2.run(t, m)
		}
		m.Close()
	}
	t.Logf("%d engine steps: %v", len(cases), time.Since(start).Round(time.Millisecond))
	input := map[string]any{"cases": cases, "wup": f.wup, "height": f.height, "synsets": f.synsets}
	return &pyPart{name: "losses", title: "losses and gradients equal the engine", input: input,
		check: func(t *testing.T, raw json.RawMessage) { checkLosses(t, raw, cases) }}
}

func checkLosses(t *testing.T, raw json.RawMessage, cases []*lossCase) {
	const cutLam = 1 - 4.0/12
	var got map[string]struct {
		Loss, Loss2, Lam float64
		GW, GB           []float64
		GW2, GB2         []float64
		Targets1         []float64
	}
	decode(t, raw, &got)
	compare := func(name string, loss float64, gw, gb []float64, res stepResult) {
		t.Helper()
		compareStep(t, name, loss, gw, gb, res)
	}
	for _, lc := range cases {
		g, ok := got[lc.Name]
		if !ok {
			t.Errorf("%s: no result from python", lc.Name)
			continue
		}
		compare(lc.Name, g.Loss, g.GW, g.GB, lc.res)
		if lc.Mix != nil && lc.Mix["box"] != nil && math.Abs(g.Lam-cutLam) > 1e-12 {
			t.Errorf("%s: the package's CutMix λ is %v, want %v", lc.Name, g.Lam, cutLam)
		}
		if lc.Loss == "ols" {
			worst := 0.0
			for i, v := range lc.res.targets1 {
				worst = math.Max(worst, math.Abs(g.Targets1[i]-float64(v)))
			}
			if worst > 1e-6 || len(g.Targets1) != len(lc.res.targets1) {
				t.Errorf("%s: the targets of the second epoch differ from the strategy's by %g", lc.Name, worst)
			}
			compare(lc.Name+", second epoch", g.Loss2, g.GW2, g.GB2, lc.res2)
		}
	}
}

// compareStep holds the package's loss and gradients (gw, gb) against an
// engine step's: the loss to 1e-5 relative, the gradients to 2e-6.
func compareStep(t *testing.T, name string, loss float64, gw, gb []float64, res stepResult) {
	t.Helper()
	if math.Abs(loss-res.Loss) > 1e-5*math.Max(1, math.Abs(res.Loss)) {
		t.Errorf("%s: the package's loss is %.7f, the engine's %.7f", name, loss, res.Loss)
	}
	worst := 0.0
	for i := range min(len(gw), len(res.GW)) {
		worst = math.Max(worst, math.Abs(gw[i]-res.GW[i]))
	}
	for i := range min(len(gb), len(res.GB)) {
		worst = math.Max(worst, math.Abs(gb[i]-res.GB[i]))
	}
	// float32 on both sides; the engine's gradient is read as the
	// weights' change, rounded to the weights' float32 precision.
	if worst > 2e-6 || len(gw) != len(res.GW) || len(gb) != len(res.GB) {
		t.Errorf("%s: the gradients differ from the engine's by up to %g (%d and %d values, the engine's %d and %d)",
			name, worst, len(gw), len(gb), len(res.GW), len(res.GB))
	}
	t.Logf("%s: loss %.6f (engine %.6f), gradients within %.2g", name, loss, res.Loss, worst)
}

// evalExamples are n examples of 1×1×n whose input is the identity.
type evalExamples struct {
	n, classes int
	y          []int64
}

func (e evalExamples) Len() int                    { return e.n }
func (e evalExamples) NumClasses() int             { return e.classes }
func (e evalExamples) Shape() (c, h, w int)        { return 1, 1, e.n }
func (e evalExamples) Label(i int) int             { return int(e.y[i]) }
func (e evalExamples) source() trainer.BatchSource { return e.batches }

type evalBatches struct {
	e    evalExamples
	next int
	size int
}

func (e evalExamples) batches(_ context.Context, _ trainer.Examples, p trainer.Pass) (trainer.Batches, error) {
	return &evalBatches{e: e, size: p.Batch}, nil
}

func (b *evalBatches) Next() (*trainer.MiniBatch, error) {
	if b.next >= b.e.n {
		return nil, io.EOF
	}
	k := min(b.size, b.e.n-b.next)
	mb := &trainer.MiniBatch{N: k, X: make([]float32, k*b.e.n), Y: b.e.y[b.next : b.next+k]}
	for i := range k {
		mb.X[i*b.e.n+b.next+i] = 1
		mb.Index = append(mb.Index, b.next+i)
	}
	b.next += k
	return mb, nil
}

// pyMetrics computes the figures of lcl's evaluation from the logits, with
// the engine's cost matrix and with the package's own WordNet heights: all
// at once, batch by batch (HierarchicalMeter), by the single functions,
// and from the severity histogram.
const pyMetrics = `
def metrics(d):
    C, n = 10, d["n"]
    z = torch.tensor(d["logits"], dtype=torch.float32).reshape(n, C)
    y = torch.tensor(d["y"])
    lca = torch.tensor(d["cost"], dtype=torch.float32).reshape(C, C)
    wn = lcl.wordnet_lca_heights([s.wnid for s in lcl.load_synsets(d["synsets"])])
    out = {"wordnet heights differ": float((wn - lca).abs().max())}
    for crm in (False, True):
        key = "crm" if crm else "argmax"
        out[key] = lcl.hierarchical_metrics(z, y, wn, crm=crm)
        meter = lcl.HierarchicalMeter(wn, crm=crm)
        for i in range(0, n, 64):
            meter.update(z[i:i+64], y[i:i+64])
        out[key + " in batches"] = meter.compute()
        out[key + " functions"] = {"mistake_severity": lcl.mistake_severity(z, y, wn, crm=crm),
            "hdist1": lcl.hierarchical_distance_at_k(z, y, wn, 1, crm=crm),
            "hdist5": lcl.hierarchical_distance_at_k(z, y, wn, 5, crm=crm),
            "hdist20": lcl.hierarchical_distance_at_k(z, y, wn, 20, crm=crm)}
        hist = lcl.severity_histogram(z, y, wn, crm=crm).double()
        out[key + " histogram"] = {"mistakes": int(hist.sum()),
            "mistake_severity": float((hist * torch.arange(len(hist))).sum() / hist.sum()),
            "by_height": [int(v) for v in hist.long()]}
    out["crm differs"] = int((lcl.crm_rank(z, wn, 1)[:, 0] != z.argmax(1)).sum())
    return out
`

func metricsPart(t *testing.T, f *fashionFiles) *pyPart {
	const c, n = 10, 300
	h, why := trainrun.Hierarchy(f.set, func(wnids []string) (*wordnet.DB, error) {
		dir := os.Getenv("WNHOME")
		if dir == "" {
			dir = "/usr/share/wordnet"
		}
		return wordnet.OpenAncestors(dir, wnids)
	})
	if h == nil {
		t.Fatalf("no hierarchy of fashion-mnist: %s", why)
	}
	cost, err := h.Matrix(0)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(60, 61))
	y := make([]int64, n)
	logits := make([]float32, n*c)
	for i := range n {
		y[i] = int64(r.IntN(c))
		for j := range c {
			logits[i*c+j] = float32(1.5 * r.NormFloat64())
		}
		if r.IntN(3) > 0 {
			logits[i*c+int(y[i])] += 2
		}
	}
	// The model's weights are the logits transposed: W[j][i] = z_i[j].
	w := make([]float32, c*n)
	for i := range n {
		for j := range c {
			w[j*n+i] = logits[i*c+j]
		}
	}
	m := linearModel(t, c, 1, n, w, nil)
	defer m.Close()
	ds := evalExamples{n: n, classes: c, y: y}
	start := time.Now()
	pm, err := trainer.EvaluateOn(context.Background(), m, ds, ds.source(), trainer.EvalOptions{Batch: 64, Hierarchy: h, Cost: cost})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trainer.EvaluateOn with --crm's cost matrix: %v", time.Since(start).Round(time.Millisecond))
	input := map[string]any{"n": n, "logits": logits, "y": y, "cost": cost, "synsets": f.synsets}
	return &pyPart{name: "metrics", title: "metrics equal lcl eval", input: input,
		check: func(t *testing.T, raw json.RawMessage) { checkMetrics(t, raw, pm, n) }}
}

func checkMetrics(t *testing.T, raw json.RawMessage, pm trainer.PeerMetrics, n int) {
	type figures struct {
		Top1            *float64 `json:"top1"`
		MistakeSeverity float64  `json:"mistake_severity"`
		Mistakes        *int64   `json:"mistakes"`
		HDist1          *float64 `json:"hdist1"`
		HDist5          *float64 `json:"hdist5"`
		HDist20         *float64 `json:"hdist20"`
		ByHeight        []int64  `json:"by_height"`
	}
	var got map[string]json.RawMessage
	decode(t, raw, &got)
	var wnDiff float64
	json.Unmarshal(got["wordnet heights differ"], &wnDiff)
	if wnDiff != 0 {
		t.Errorf("the package's WordNet LCA heights differ from the engine's cost matrix by %v", wnDiff)
	}
	var crmDiffers int
	json.Unmarshal(got["crm differs"], &crmDiffers)
	if crmDiffers == 0 {
		t.Errorf("CRM's prediction equals the argmax on every example: the test cannot tell them apart")
	}
	if pm.TestHier == nil || pm.TestCRM == nil {
		t.Fatalf("lcl eval's figures lack the hierarchical ones: %+v", pm)
	}
	want := map[string]struct {
		top1 float64
		h    *trainer.HierMetrics
	}{
		"argmax": {pm.TestTop1, pm.TestHier},
		"crm":    {pm.TestCRM.Top1, &pm.TestCRM.HierMetrics},
	}
	for _, key := range []string{"argmax", "crm"} {
		w := want[key]
		for _, variant := range []string{key, key + " in batches", key + " functions", key + " histogram"} {
			var fg figures
			if err := json.Unmarshal(got[variant], &fg); err != nil {
				t.Fatalf("%s: %v (%s)", variant, err, got[variant])
			}
			check := func(what string, a *float64, b float64) {
				if a != nil && math.Abs(*a-b) > 1e-9 {
					t.Errorf("%s: %s %.12g, lcl eval's %.12g", variant, what, *a, b)
				}
			}
			check("top-1", fg.Top1, w.top1)
			check("mistake severity", &fg.MistakeSeverity, w.h.MistakeSeverity)
			check("hier. dist@1", fg.HDist1, w.h.HDist1)
			check("hier. dist@5", fg.HDist5, w.h.HDist5)
			check("hier. dist@20", fg.HDist20, w.h.HDist20)
			if fg.Mistakes != nil && *fg.Mistakes != w.h.Mistakes {
				t.Errorf("%s: %d mistakes, lcl eval's %d", variant, *fg.Mistakes, w.h.Mistakes)
			}
			// The package's histogram runs to the matrix's greatest
			// height, the engine's to the greatest with a mistake.
			for len(fg.ByHeight) > 0 && fg.ByHeight[len(fg.ByHeight)-1] == 0 {
				fg.ByHeight = fg.ByHeight[:len(fg.ByHeight)-1]
			}
			if strings.HasSuffix(variant, "histogram") && !slices.Equal(fg.ByHeight, w.h.MistakesByHeight) {
				t.Errorf("%s: mistakes by height %v, lcl eval's %v", variant, fg.ByHeight, w.h.MistakesByHeight)
			}
		}
		t.Logf("%s: top-1 %.4f, severity %.4f over %d mistakes, hier. dist@1/5/20 %.4f %.4f %.4f", key, w.top1,
			w.h.MistakeSeverity, w.h.Mistakes, w.h.HDist1, w.h.HDist5, w.h.HDist20)
	}
	t.Logf("CRM's prediction differs from the argmax on %d of %d examples", crmDiffers, n)
}
