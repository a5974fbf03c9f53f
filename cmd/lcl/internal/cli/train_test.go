package cli

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/safetensors"
)

const synth = "synthetic?n=96&test=48&classes=4&shape=1,8,8"

// synth10 is a 10-class synthetic set of Fashion-MNIST's shape, for the
// strategies that take a 10×10 matrix: 1,200 training images as 2 % of
// Fashion-MNIST gave, but 200 test images instead of 10,000 (whose
// evaluation after every epoch was most of those tests' time).
const synth10 = "synthetic?n=1200&test=200&classes=10&shape=1,28,28"

func TestTrainEvalModelsCLI(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	run := filepath.Join(dir, "run")
	code, out, errs := runLCL(context.Background(), t, "--store", store, "train", "--data", synth, "--model", "mlp:hidden=16", "--epochs", "2",
		"--batch", "16", "--lr", "0.1", "--schedule", "step", "--step-size", "1", "--threads", "1", "--out", run)
	if code != 0 {
		t.Fatalf("train exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "test top-1") || !strings.Contains(errs, "epoch 2/2") {
		t.Errorf("train output:\n%s\n%s", out, errs)
	}
	var res trainer.Result
	b, err := os.ReadFile(filepath.Join(run, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Epochs) != 2 || math.Abs(res.Epochs[1].LR-0.01) > 1e-12 {
		t.Fatalf("result.json: %v %+v", err, res.Epochs)
	}
	// The same run directory is refused without --resume.
	if code, _, errs := runLCL(context.Background(), t, "--store", store, "train", "--data", synth, "--model", "mlp", "--out", run); code != 2 || !strings.Contains(errs, "--resume") {
		t.Errorf("rerun into a used --out: exit %d, %s", code, errs)
	}
	// eval reads model and data from the weights' metadata.
	code, out, errs = runLCL(context.Background(), t, "--json", "eval", "--checkpoint", run, "--threads", "1")
	if code != 0 {
		t.Fatalf("eval exit %d: %s", code, errs)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(out), &ev); err != nil || ev["message_type"] != "eval" || ev["test_top1"] != res.Final[0].TestTop1 {
		t.Errorf("eval %q (%v), train final %v", out, err, res.Final[0].TestTop1)
	}
	if _, ok := ev["test_hier"]; ok {
		t.Errorf("eval of synthetic data (no label set) reports hierarchical metrics: %q", out)
	}
	// --crm needs a hierarchy: refused before evaluating, with the reason.
	code, _, errs = runLCL(context.Background(), t, "eval", "--checkpoint", run, "--threads", "1", "--crm")
	if code != 2 || !strings.Contains(errs, "--crm needs a hierarchy of the classes: the classes have no label set") {
		t.Errorf("eval --crm without a hierarchy: exit %d, %s", code, errs)
	}
	st, err := simstore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := st.ListRuns(context.Background())
	st.Close()
	if err != nil || len(runs) != 1 || runs[0].Status != "done" || runs[0].Dir != run || len(runs[0].Top1) != 1 {
		t.Errorf("store runs: %v %+v", err, runs)
	}
	// lcl models lists architectures, presets and optimizers.
	code, out, errs = runLCL(context.Background(), t, "models")
	if code != 0 || !strings.Contains(out, "resnet50") || !strings.Contains(out, "wrn-cifar") ||
		!strings.Contains(out, "beta1=0.9,beta2=0.999,eps=1e-08,weight_decay=0,momentum_decay=0.004") {
		t.Errorf("models: %d %s %s", code, out, errs)
	}
}

func TestTrainUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"train"}, "--data or --synsets"},
		{[]string{"train", "--data", synth, "--strategy", "nope"}, "unknown"},
		{[]string{"train", "--data", synth, "--fraction", "0"}, "--fraction"},
		{[]string{"train", "--data", synth, "--schedule", "poly"}, `--schedule poly: want constant, step, multistep, cosine`},
		{[]string{"train", "--data", synth, "--preset", "nope"}, "unknown preset"},
		{[]string{"train", "--data", synth, "--schedule", "multistep", "--milestones", "a"}, "milestones"},
		{[]string{"train", "--data", synth, "--momentum", "0", "--nesterov"}, "nesterov"},
		{[]string{"train", "--data", synth, "--optimizer", "lamb"}, "--optimizer lamb: want sgd, rmsprop, adam, adamw, "},
		{[]string{"train", "--data", synth, "--optimizer", "adamw", "--momentum", "0.9"}, "--momentum 0.9 applies to --optimizer sgd or rmsprop, and this run has --optimizer adamw"},
		{[]string{"train", "--data", synth, "--betas", "0.9"}, "--betas"},
		{[]string{"train", "--data", synth, "--betas", "0.9,0.99"}, "--betas: optimizer sgd has no parameter beta1"},
		{[]string{"train", "--data", synth, "--patience", "3"}, "--patience 3 applies to --val-fraction F"},
		{[]string{"train", "--data", synth, "--val-fraction", "1"}, "--val-fraction 1"},
		{[]string{"train", "--data", synth, "--val-fraction", "0.1", "--select", "auc"}, "--select"},
		{[]string{"train", "--data", synth, "--optimizer", "rmsprop", "--nesterov"}, "--nesterov true applies to --optimizer sgd, and this run has --optimizer rmsprop"},
		{[]string{"eval"}, "--checkpoint"},
		{[]string{"eval", "--checkpoint", "/nonexistent/run"}, "--checkpoint /nonexistent/run: no such file or folder"},
		{[]string{"eval", "--checkpoint", ".", "--precision", "bf61"}, `--precision "bf61": want fp32, bf16 or fp16; did you mean bf16?`},
		{[]string{"eval", "--checkpoint", ".", "--device", "cdua"}, `--device "cdua": want cpu, cuda or cuda:N`},
		{[]string{"eval", "--checkpoint", ".", "--batch", "0"}, "--batch 0: want ≥ 1"},
		{[]string{"eval", "--checkpoint", ".", "--batch", "4294967296"}, "--batch 4294967296: want ≥ 1, at most 1048576"},
		{[]string{"eval", "--checkpoint", ".", "--workers", "100000000"}, "--workers 100000000: want ≥ 0 (0: the number of CPUs), at most 1024"},
		{[]string{"eval", "--checkpoint", ".", "--threads", "100000000"}, "--threads 100000000: want ≥ 0 (0: libtorch's default), at most 1024"},
		{[]string{"train", "--data", synth, "--device", "gpu"}, `--device "gpu": want cpu, cuda or cuda:N`},
		{[]string{"train", "--data", synth, "--milestones", "3,5"}, "--milestones 3,5 applies to --schedule multistep"},
		{[]string{"train", "--data", synth, "--model", "resnet5"}, `unknown model "resnet5"; did you mean resnet50`},
		// Strategy parameters are checked before any similarity is looked for.
		{[]string{"train", "--data", synth, "--strategy", "lcl", "--epsilon", "1.5", "--source", "nothing-here"}, "epsilon = 1.5, want a value in (0,1]"},
		{[]string{"train", "--data", synth, "--strategy", "lcl", "--source", "matrix"}, "give it as --matrix FILE.npy"},
		// Checked before a launcher starts its workers: no advice to resume.
		{[]string{"train", "--data", synth, "--nproc", "2", "--fraction", "2"}, "--fraction 2: want 0 < fraction ≤ 1"},
		{[]string{"train", "--config", "/nonexistent.yaml"}, "--config: open /nonexistent.yaml"},
		{[]string{"train", "--data", synth, "--randaugment", "2,31"}, "--randaugment"},
		{[]string{"train", "--data", synth, "--randaugment", "2,9", "--trivialaugment"}, "choose one policy"},
		{[]string{"train", "--data", synth, "--random-erasing", "2"}, "--random-erasing 2: want a probability"},
		{[]string{"train", "--data", synth, "--mixup=-1"}, "--mixup -1: want α ≥ 0"},
		{[]string{"train", "--data", synth, "--mixup", "1", "--mix-prob", "0"}, "--mix-prob 0: want a probability"},
		{[]string{"train", "--data", synth, "--mix-switch-prob", "0.3"}, "--mix-switch-prob without both --mixup and --cutmix"},
		{[]string{"train", "--data", synth, "--mixup", "1", "--mix-switch-prob", "0.3"}, "--mix-switch-prob without both --mixup and --cutmix"},
		{[]string{"train", "--data", synth, "--trivialaugment"}, "no pixels to augment"},
	}
	for _, tc := range cases {
		code, _, errs := runLCL(context.Background(), t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "--resume") {
			t.Errorf("%v: exit %d, %q; want usage error with %q", tc.args, code, errs, tc.want)
		}
	}
	// A folder that is not there is named, with the kinds a spec may name.
	if code, _, errs := runLCL(context.Background(), t, "train", "--data", "/nonexistent"); code != 2 ||
		!strings.HasPrefix(errs, "lcl: --data /nonexistent: no such folder (give a data set folder, or a spec KIND[:DIR] with KIND one of fashion-mnist, mnist, quickdraw, cifar10, cifar100, folder, cub, nabirds, synthetic)\n") {
		t.Errorf("--data /nonexistent: exit %d, %q", code, errs)
	}
}

// Every refused flag combination of lcl train is refused before anything
// is written: no run directory (no metrics, no event file), and the line
// names the flag, its value and what would do. Conflicting or impossible
// combinations are usage errors (exit 2); weights that do not fit the
// model are found by the trainer (exit 1), still before the directory.
func TestTrainRefusalsWriteNothing(t *testing.T) {
	dir := t.TempDir()
	notWeights := filepath.Join(dir, "not.safetensors")
	if err := os.WriteFile(notWeights, []byte("no header"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--store", filepath.Join(dir, "store"), "train", "--data", synth, "--model", "mlp:hidden=8", "--epochs", "1", "--threads", "1"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"fp16 on the CPU", []string{"--precision", "fp16"}, 2,
			"--precision fp16 needs a CUDA device (--device cuda); on the CPU use --precision bf16 (or auto, or fp32)"},
		{"two matrices", []string{"--strategy", "lcl", "--matrix", "sim.npy", "--similarity-key", "semantic/other"}, 2,
			"--matrix sim.npy and --similarity-key semantic/other both name the similarity matrix: give one of them"},
		{"--init-skip alone", []string{"--init-skip", "fc"}, 2,
			"--init-skip fc keeps those modules of --init's weights at their initialisation: give --init FILE.safetensors too, or drop --init-skip"},
		{"--init not there", []string{"--init", "/nonexistent.safetensors"}, 2, "--init /nonexistent.safetensors: no such file"},
		{"--data not there", []string{"--data", "/nonexistent"}, 2, "--data /nonexistent: no such folder"},
		{"epsilon of a strategy without", []string{"--strategy", "sl", "--epsilon", "0.9"}, 2,
			"--epsilon 0.9: strategy sl takes no parameters (epsilon is a parameter of --strategy lcl)"},
		{"a misspelt parameter", []string{"--strategy", "lcl", "--param", "epsilom=0.9"}, 2,
			"--param epsilom=0.9: strategy lcl takes epsilon, per-step, clip-negative; did you mean epsilon?"},
		{"adam's momentum", []string{"--optimizer", "adam", "--momentum", "0.9"}, 2,
			"--momentum 0.9 applies to --optimizer sgd or rmsprop, and this run has --optimizer adam: give --optimizer sgd or rmsprop, or drop --momentum"},
		{"negative epochs", []string{"--epochs", "-1"}, 2, "--epochs -1: want a whole number from 1 to 1000000"},
		{"no batch", []string{"--batch", "0"}, 2, "--batch 0: want a whole number from 1 to 1048576"},
		// Every number is finite and in range (issue 48, item 8).
		{"an infinite learning rate", []string{"--lr", "Inf"}, 2, "--lr +Inf: want a finite value > 0"},
		{"a huge number of threads", []string{"--threads", "100000000"}, 2, "--threads 100000000: want a whole number from 0 to 1024"},
		{"a NaN epsilon", []string{"--strategy", "lcl", "--epsilon", "NaN"}, 2, `--epsilon NaN: strategy lcl: parameter "epsilon": "NaN" is not a finite number`},
		{"an infinite parameter", []string{"--strategy", "kd", "--param", "temperature=inf"}, 2, `--param temperature=inf: strategy kd: parameter "temperature": "inf" is not a finite number`},
		// A strategy without a similarity checks its values before the run too.
		{"ols's smoothing", []string{"--strategy", "ols", "--param", "smoothing=2"}, 2, "strategy ols refuses its parameters (smoothing=2)"},
		{"mix-switch-prob without cutmix", []string{"--mixup", "1", "--mix-switch-prob", "0.3"}, 2, "--mix-switch-prob without both --mixup and --cutmix"},
		{"a misspelt optimizer", []string{"--optimizer", "adamx"}, 2,
			"--optimizer adamx: want sgd, rmsprop, adam, adamw, radam or nadam; did you mean adam"},
		{"a misspelt strategy", []string{"--strategy", "lcll"}, 2, `--strategy: unknown strategy plugin "lcll"; did you mean lcl?`},
		// Found before a launcher starts its workers.
		{"a misspelt strategy under --nproc", []string{"--strategy", "lcll", "--nproc", "2"}, 2, `--strategy: unknown strategy plugin "lcll"; did you mean lcl?`},
		{"a misspelt model", []string{"--model", "resnt18"}, 2, `unknown model "resnt18"; did you mean resnet18`},
		{"weights that are not", []string{"--init", notWeights}, 1, "--init"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append(append(slices.Clone(base), tc.args...), "--out", out)
			code, _, errs := runLCL(context.Background(), t, args...)
			// A usage error is the only line; the trainer's refusal follows
			// the run's header.
			lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
			last := lines[len(lines)-1]
			if code != tc.code || !strings.HasPrefix(last, "lcl: ") || !strings.Contains(last, tc.want) || (code == 2 && len(lines) != 1) {
				t.Errorf("exit %d, %q; want exit %d and a line with %q", code, errs, tc.code, tc.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused run left %s (%v)", out, err)
			}
		})
	}
}

// lcl train --config reads a grid's cell; flags given too override it. The
// run is stored under the key of the grid run of the same settings, and
// its directory holds the TensorBoard events and metrics.csv beside
// metrics.jsonl.
func TestTrainConfigFile(t *testing.T) {
	dir := t.TempDir()
	store, run := filepath.Join(dir, "store"), filepath.Join(dir, "run")
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte("data: \""+synth+"\"\nmodel: mlp:hidden=16\nepochs: 1\nseed: 3\nargs: {batch: \"16\", lr: \"0.1\"}\nthreads: 1\n"), 0o644)
	code, out, errs := runLCL(context.Background(), t, "--store", store, "train", "--config", cfg, "--epochs", "2", "--log-every", "2", "--out", run)
	if code != 0 {
		t.Fatalf("train exit %d\n%s\n%s", code, out, errs)
	}
	var res trainer.Result
	b, _ := os.ReadFile(filepath.Join(run, "result.json"))
	if err := json.Unmarshal(b, &res); err != nil || len(res.Epochs) != 2 || res.Seed != 3 || res.Epochs[0].Steps != 6 {
		t.Fatalf("result.json: %v %+v", err, res)
	}
	two := 2
	want := experiment.Cell{Data: synth, Model: "mlp:hidden=16", Epochs: two, Seed: &[]int{3}[0], Args: map[string]string{"batch": "16", "lr": "0.1"}}.Run()
	st, err := simstore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.GetRun(context.Background(), want.ID)
	st.Close()
	if err != nil || rec.Status != "done" {
		t.Errorf("the run is not stored under its cell's key %s (%+v): %v", want.ID, want.Config, err)
	}
	if rows, err := os.ReadFile(filepath.Join(run, "metrics.csv")); err != nil || strings.Count(string(rows), "\n") != 3 {
		t.Errorf("metrics.csv: %v\n%s", err, rows)
	}
	if events, _ := filepath.Glob(filepath.Join(run, "events.out.tfevents.*")); len(events) != 1 {
		t.Errorf("event files %v", events)
	}
	// A key a cell does not have is a usage error naming its line.
	os.WriteFile(cfg, []byte("data: x\nmodels: [cnn]\n"), 0o644)
	if code, _, errs := runLCL(context.Background(), t, "train", "--config", cfg); code != 2 || !strings.Contains(errs, "line 2: unknown key models; did you mean model? (a run's keys: labels") {
		t.Errorf("bad config: exit %d, %s", code, errs)
	}
}

// AdamW with clipping, a moving average and model selection runs end to
// end: the summary and result.json say which epoch's weights were tested,
// and the best and averaged weights are written.
func TestTrainAdamWSelection(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	code, out, errs := runLCL(context.Background(), t, "--store", filepath.Join(dir, "store"), "train", "--data", synth,
		"--model", "mlp:hidden=16", "--optimizer", "adamw", "--lr", "0.01", "--clip-grad-norm", "1", "--ema-decay", "0.9",
		"--val-fraction", "0.25", "--select", "loss", "--epochs", "3", "--batch", "16", "--threads", "1", "--out", run)
	if code != 0 {
		t.Fatalf("train exit %d\n%s\n%s", code, out, errs)
	}
	var res trainer.Result
	if b, err := os.ReadFile(filepath.Join(run, "result.json")); err != nil || json.Unmarshal(b, &res) != nil || res.Selection == nil ||
		res.Selection.Metric != "val_loss" || !res.Selection.EMA || res.Selection.ValExamples != 24 {
		t.Fatalf("result.json: %v %+v", err, res.Selection)
	}
	if want := "(the moving average of the weights of epoch"; !strings.Contains(out, want) || !strings.Contains(errs, "val top-1") {
		t.Errorf("output lacks %q or the validation figures:\n%s\n%s", want, out, errs)
	}
	for _, f := range []string{"model.safetensors", "model-ema.safetensors", "model-best.safetensors"} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Error(err)
		}
	}
	// lcl eval of the run directory evaluates the selected weights: the
	// figures the run reported.
	code, out, errs = runLCL(context.Background(), t, "--json", "eval", "--checkpoint", run, "--threads", "1")
	var ev map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev["test_top1"] != res.Final[0].TestTop1 ||
		ev["checkpoint"] != filepath.Join(run, "model-best.safetensors") {
		t.Errorf("eval: exit %d %s %s; the run reported %v", code, out, errs, res.Final[0].TestTop1)
	}
}

// kd's teacher-model trains the teacher stage with another architecture than
// the student: the checkpoint holds a teacher of the teacher's width.
func TestTrainKDTeacherOfAnotherArchitecture(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	code, out, errs := runLCL(context.Background(), t, "--store", filepath.Join(dir, "store"), "train", "--data", synth,
		"--model", "mlp:hidden=16", "--strategy", "kd", "--param", "teacher-model=mlp:hidden=8", "--epochs", "1",
		"--batch", "16", "--threads", "1", "--out", run)
	if code != 0 {
		t.Fatalf("train exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(run, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := safetensors.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	widths := map[string]int64{} // stage → width of its hidden layer (the bias that is not the 4-class output's)
	for _, x := range ts {
		if rest, ok := strings.CutPrefix(x.Name, "stage/"); ok && strings.HasSuffix(x.Name, "bias") && len(x.Shape) == 1 && x.Shape[0] != 4 {
			stage, _, _ := strings.Cut(rest, "/")
			widths[stage] = x.Shape[0]
		}
	}
	if widths["teacher"] != 8 {
		t.Fatalf("teacher hidden width %d in the checkpoint (tensors by stage %v), want 8", widths["teacher"], widths)
	}
	var res trainer.Result
	if b, err := os.ReadFile(filepath.Join(run, "result.json")); err != nil || json.Unmarshal(b, &res) != nil || len(res.Top1) != 1 {
		t.Fatalf("result.json: %v %+v", err, res)
	}
}

// lcl's optional per-iteration update runs end to end: the strategy plugin is
// asked for targets before every optimiser step.
func TestTrainLCLPerStep(t *testing.T) {
	dir := t.TempDir()
	sim := filepath.Join(dir, "sim.npy")
	s := []float64{1, 0.5, 0.2, 0.1, 0.5, 1, 0.3, 0.1, 0.2, 0.3, 1, 0.4, 0.1, 0.1, 0.4, 1}
	if err := npy.WriteFile(sim, 4, 4, s); err != nil {
		t.Fatal(err)
	}
	entropies := func(perStep string) []float64 {
		run := filepath.Join(dir, "run-"+perStep)
		code, out, errs := runLCL(context.Background(), t, "--store", filepath.Join(dir, "store"), "train", "--data", synth,
			"--model", "mlp:hidden=16", "--strategy", "lcl", "--matrix", sim, "--param", "per-step="+perStep, "--epsilon", "0.9",
			"--epochs", "2", "--batch", "16", "--threads", "1", "--out", run)
		if code != 0 {
			t.Fatalf("per-step=%s: train exit %d\n%s\n%s", perStep, code, out, errs)
		}
		b, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var ent []float64
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m struct {
				TargetEntropy float64 `json:"target_entropy"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			ent = append(ent, m.TargetEntropy)
		}
		return ent
	}
	epoch, step := entropies("false"), entropies("true")
	// Both start from v(0). 96 examples in batches of 16 = 6 updates an
	// epoch, so per step the second epoch starts at v(6), per epoch at v(1).
	if len(epoch) != 2 || len(step) != 2 || epoch[0] != step[0] || !(step[1] < epoch[1]) || step[1] <= 0 {
		t.Fatalf("target entropy per epoch: per-epoch %v, per-step %v; want equal starts and per-step sharper after", epoch, step)
	}
}

// A --synsets that does not load stops the run (it named the classes of
// nothing before: a typo gave unnamed classes).
func TestTrainSynsetsMustLoad(t *testing.T) {
	code, _, errs := runLCL(context.Background(), t, "--store", t.TempDir(), "train", "--data", synth, "--synsets", "fashion-mnst",
		"--out", filepath.Join(t.TempDir(), "run"))
	if code != 1 || !strings.Contains(errs, "--synsets") || !strings.Contains(errs, "fashion-mnst") {
		t.Errorf("exit %d, %q", code, errs)
	}
}

// --mixup and --cutmix train Fashion-MNIST, are recorded in result.json and
// in the run's identity (continuing with other mixing is refused), and a
// run continued from its checkpoint mixes as an uninterrupted one.
func TestTrainMix(t *testing.T) {
	dir := t.TempDir()
	args := func(run, epochs string, extra ...string) []string {
		return append([]string{"train", "--synsets", "fashion-mnist", "--model", "mlp:hidden=16", "--fraction", "0.01", "--epochs", epochs,
			"--batch", "32", "--schedule", "constant", "--threads", "1", "--no-store", "--out", filepath.Join(dir, run)}, extra...)
	}
	mixing := []string{"--mixup", "0.8", "--cutmix", "1"}
	if code, out, errs := runLCL(context.Background(), t, args("run", "1", mixing...)...); code != 0 {
		t.Fatalf("train exit %d\n%s\n%s", code, out, errs)
	}
	if res := readResult(t, filepath.Join(dir, "run")); res.Mix != "mixup=0.8 cutmix=1" {
		t.Fatalf("result.json: mix %q", res.Mix)
	}
	code, _, errs := runLCL(context.Background(), t, args("run", "2", "--resume", "--mixup", "0.2")...)
	if code == 0 || !strings.Contains(errs, `written for mix "mixup=0.8 cutmix=1", this run has "mixup=0.2"`) {
		t.Errorf("continued with other mixing: exit %d, %s", code, errs)
	}
	if code, out, errs := runLCL(context.Background(), t, args("run", "2", append(mixing, "--resume")...)...); code != 0 {
		t.Fatalf("continued with the same mixing: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runLCL(context.Background(), t, args("whole", "2", mixing...)...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s\n%s", code, out, errs)
	}
	a := sameEpochs(t, filepath.Join(dir, "run"), filepath.Join(dir, "whole"), 2)
	// Without mixing the run trains on other batches.
	if code, out, errs := runLCL(context.Background(), t, args("plain", "1")...); code != 0 {
		t.Fatalf("plain run: exit %d\n%s\n%s", code, out, errs)
	}
	if p := readResult(t, filepath.Join(dir, "plain")); p.Mix != "" || reflect.DeepEqual(p.Epochs[0].PeerMetrics, a.Epochs[0].PeerMetrics) {
		t.Errorf("the plain run: mix %q, epoch 1 %+v like the mixed run's", p.Mix, p.Epochs[0].PeerMetrics)
	}
}

// --strategy ols trains Fashion-MNIST: its first epoch's targets are label
// smoothing's, later ones its own predictions' (the target entropy moves);
// a run continued with a larger --epochs from its finished checkpoint plans
// and trains as an uninterrupted one (the class probabilities travel in the
// checkpoint).
func TestTrainOLS(t *testing.T) {
	dir := t.TempDir()
	args := func(run, epochs string, extra ...string) []string {
		return append([]string{"train", "--synsets", "fashion-mnist", "--model", "mlp:hidden=16", "--fraction", "0.02", "--epochs", epochs,
			"--batch", "32", "--schedule", "constant", "--lr", "0.05", "--threads", "1", "--no-store", "--strategy", "ols",
			"--out", filepath.Join(dir, run)}, extra...)
	}
	for _, a := range [][]string{args("whole", "3"), args("part", "1"), args("part", "3", "--resume")} {
		if code, out, errs := runLCL(context.Background(), t, a...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", a, code, out, errs)
		}
	}
	a := sameEpochs(t, filepath.Join(dir, "part"), filepath.Join(dir, "whole"), 3)
	if e1, e2 := a.Epochs[0].TargetEntropy, a.Epochs[1].TargetEntropy; e1 == e2 || !(e2 > 0) {
		t.Errorf("target entropy %v then %v: want the online targets to replace label smoothing's", e1, e2)
	}
}

// lcl train --strategy lcl --preset cifar-modern trains Fashion-MNIST (small
// settings) with the preset's augmentation, mixing and EMA; a mixing flag
// given replaces the preset's.
func TestTrainModernPreset(t *testing.T) {
	dir := t.TempDir()
	sim := filepath.Join(dir, "sim.npy")
	s := make([]float64, 100)
	for i := range 10 {
		for j := range 10 {
			s[i*10+j] = 1 / (1 + math.Abs(float64(i-j)))
		}
	}
	if err := npy.WriteFile(sim, 10, 10, s); err != nil {
		t.Fatal(err)
	}
	run := func(name string, extra ...string) trainer.Result {
		args := append([]string{"train", "--synsets", "fashion-mnist", "--model", "mlp:hidden=16", "--fraction", "0.01", "--epochs", "1",
			"--batch", "32", "--threads", "1", "--no-store", "--strategy", "lcl", "--matrix", sim, "--preset", "cifar-modern",
			"--out", filepath.Join(dir, name)}, extra...)
		if code, out, errs := runLCL(context.Background(), t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", extra, code, out, errs)
		}
		return readResult(t, filepath.Join(dir, name))
	}
	res := run("modern")
	if res.Augment != "trivialaugment erasing=0.5" || res.Mix != "mixup=1 cutmix=1" || res.EMA == nil {
		t.Errorf("cifar-modern: augment %q, mix %q, EMA %v", res.Augment, res.Mix, res.EMA)
	}
	if res := run("mixup", "--mixup", "0.2"); res.Augment != "trivialaugment erasing=0.5" || res.Mix != "mixup=0.2" {
		t.Errorf("cifar-modern --mixup 0.2: augment %q, mix %q", res.Augment, res.Mix)
	}
}

// --randaugment and --random-erasing train Fashion-MNIST, are recorded in
// result.json and in the run's identity: continuing the run with another
// policy is refused; with the same one it goes on to the figures of an
// uninterrupted run (with other data workers: each example's augmentation
// is drawn from its own seed).
func TestTrainAugment(t *testing.T) {
	dir := t.TempDir()
	args := func(run, epochs string, extra ...string) []string {
		return append([]string{"train", "--synsets", "fashion-mnist", "--model", "mlp:hidden=16", "--fraction", "0.01", "--epochs", epochs,
			"--batch", "32", "--schedule", "constant", "--threads", "1", "--no-store", "--out", filepath.Join(dir, run)}, extra...)
	}
	policy := []string{"--randaugment", "2,9", "--random-erasing", "0.5"}
	code, out, errs := runLCL(context.Background(), t, args("run", "1", append(policy, "--workers", "1")...)...)
	if code != 0 {
		t.Fatalf("train exit %d\n%s\n%s", code, out, errs)
	}
	if res := readResult(t, filepath.Join(dir, "run")); res.Augment != "randaugment=2,9 erasing=0.5" {
		t.Fatalf("result.json: augment %q", res.Augment)
	}
	code, _, errs = runLCL(context.Background(), t, args("run", "2", "--resume", "--trivialaugment", "--random-erasing", "0.5")...)
	if code == 0 || !strings.Contains(errs, `written for augment "randaugment=2,9 erasing=0.5", this run has "trivialaugment erasing=0.5"`) {
		t.Errorf("continued with another policy: exit %d, %s", code, errs)
	}
	code, out, errs = runLCL(context.Background(), t, args("run", "2", append(policy, "--resume", "--workers", "1")...)...)
	if code != 0 {
		t.Fatalf("continued with the same policy: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runLCL(context.Background(), t, args("whole", "2", append(policy, "--workers", "3")...)...)
	if code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s\n%s", code, out, errs)
	}
	a := sameEpochs(t, filepath.Join(dir, "run"), filepath.Join(dir, "whole"), 2)
	// Without the policy the run trains on other images.
	code, out, errs = runLCL(context.Background(), t, args("plain", "1")...)
	if code != 0 {
		t.Fatalf("plain run: exit %d\n%s\n%s", code, out, errs)
	}
	if p := readResult(t, filepath.Join(dir, "plain")); p.Augment != "" || reflect.DeepEqual(p.Epochs[0].PeerMetrics, a.Epochs[0].PeerMetrics) {
		t.Errorf("the plain run: augment %q, epoch 1 %+v like the augmented run's", p.Augment, p.Epochs[0].PeerMetrics)
	}
}

// readResult reads the result.json of the run directory dir.
// sameEpochs checks that the run continued in dir has the epochs, and each
// epoch the figures, of the uninterrupted run in whole; it returns the
// continued run's result.
func sameEpochs(t *testing.T, dir, whole string, epochs int) trainer.Result {
	t.Helper()
	a, b := readResult(t, dir), readResult(t, whole)
	if len(a.Epochs) != epochs || len(b.Epochs) != epochs {
		t.Fatalf("epochs: %d continued and %d uninterrupted, want %d", len(a.Epochs), len(b.Epochs), epochs)
	}
	for i := range a.Epochs {
		if !reflect.DeepEqual(a.Epochs[i].PeerMetrics, b.Epochs[i].PeerMetrics) {
			t.Errorf("epoch %d: continued %+v, uninterrupted %+v", i+1, a.Epochs[i].PeerMetrics, b.Epochs[i].PeerMetrics)
		}
	}
	return a
}

func readResult(t *testing.T, dir string) trainer.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r trainer.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// What lcl train, models and the global help show: the run's header names
// the optimiser and counts threads in words, the summary labels the
// system share, a resumed run says where it continues, presets are
// listed by name, --store names every fallback.
func TestTrainShowsWhatItRuns(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	args := []string{"--store", filepath.Join(dir, "store"), "train", "--data", synth, "--model", "mlp:hidden=8", "--batch", "16",
		"--optimizer", "adamw", "--lr", "1e-3", "--threads", "1", "--out", run}
	code, out, errs := runLCL(context.Background(), t, append(args, "--epochs", "1")...)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "(adamw, epochs 1, batch 16, lr 0.001 ") || !strings.Contains(errs, ", 1 thread, OMP_WAIT_POLICY=") ||
		strings.Contains(errs, "resumed") {
		t.Errorf("header:\n%s", errs)
	}
	if !strings.Contains(out, "s system, ") || !strings.Contains(out, "% of it system): ") {
		t.Errorf("summary:\n%s", out)
	}
	code, out, errs = runLCL(context.Background(), t, append(args, "--epochs", "2", "--resume")...)
	if code != 0 || !strings.Contains(errs, "\nlcl train: resumed from epoch 2 of 2\n") {
		t.Errorf("resume: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runLCL(context.Background(), t, "models")
	// The presets' table: from its header line to the blank line before
	// the optimizers'.
	_, presets, _ := strings.Cut(out, "\nPRESET")
	presets, _, _ = strings.Cut(presets, "\n\n")
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(presets), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	if code != 0 || len(names) < 10 || !slices.IsSorted(names) {
		t.Errorf("lcl models' presets: %q", names)
	}
	if _, out, _ := runLCL(context.Background(), t, "--help"); !strings.Contains(out, "$LCL_STORE, else $XDG_DATA_HOME/lcl/store, else ~/.local/share/lcl/store") {
		t.Errorf("--store's help:\n%s", out)
	}
}

// twoGroupMatrix writes dir/sim.npy: 10 classes in two groups (0–4, 5–9),
// similarity 1 to itself, 0.5 within its group, 0 across.
func twoGroupMatrix(t *testing.T, dir string) (string, []float64) {
	t.Helper()
	sim := filepath.Join(dir, "sim.npy")
	s := make([]float64, 100)
	for i := range 10 {
		for j := range 10 {
			switch {
			case i == j:
				s[i*10+j] = 1
			case i/5 == j/5:
				s[i*10+j] = 0.5
			}
		}
	}
	if err := npy.WriteFile(sim, 10, 10, s); err != nil {
		t.Fatal(err)
	}
	return sim, s
}

// trainResumedAndParallel trains the runs the HXE and HAFrame tests
// compare: "whole" (2 epochs, mixup) against "part" (1 epoch, then resumed
// to 2), and "one" (1 epoch, with oneExtra) against "two" (2 workers).
func trainResumedAndParallel(t *testing.T, args func(run, epochs string, extra ...string) []string, oneExtra ...string) {
	t.Helper()
	for _, a := range [][]string{args("whole", "2", "--mixup", "0.5"), args("part", "1", "--mixup", "0.5"),
		args("part", "2", "--mixup", "0.5", "--resume"), args("one", "1", oneExtra...), args("two", "1", "--nproc", "2")} {
		if code, out, errs := runLCL(context.Background(), t, a...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", a, code, out, errs)
		}
	}
}

// lcl train --strategy hxe on a two-level hierarchy (classes 0–4 and 5–9
// under one node each): a continued run equals an uninterrupted one (the
// groups are the strategy's, made again from the same matrix), with
// mixing; and two data-parallel workers train the first epoch as one
// process does (no batch norm: the same update up to summation order, to
// 1e-3 of the epoch's loss).
func TestTrainHXE(t *testing.T) {
	t.Setenv("LCL_TEST_CLI", "1") // the test binary stands in for lcl in the workers
	dir := t.TempDir()
	sim, _ := twoGroupMatrix(t, dir)
	args := synth10Args(dir, sim, "--strategy", "hxe", "--param", "alpha=0.2")
	trainResumedAndParallel(t, args)
	sameEpochs(t, filepath.Join(dir, "part"), filepath.Join(dir, "whole"), 2)
	sameFirstEpochLoss(t, dir)
}

// lcl train --strategy haframe on the two-level hierarchy of TestTrainHXE:
// the fixed classifier is set again after a resume (a continued run equals
// an uninterrupted one), and two data-parallel workers, whose gradient
// all-reduce skips the fixed head, train the first epoch as one process
// does (to 1e-3 of the epoch's loss, as hxe's).
func TestTrainHAFrame(t *testing.T) {
	t.Setenv("LCL_TEST_CLI", "1") // the test binary stands in for lcl in the workers
	dir := t.TempDir()
	sim, s := twoGroupMatrix(t, dir)
	args := synth10Args(dir, sim, "--strategy", "haframe")
	trainResumedAndParallel(t, args, "--ema-decay", "0.9")
	sameEpochs(t, filepath.Join(dir, "part"), filepath.Join(dir, "whole"), 2)
	sameFirstEpochLoss(t, dir)
	checkHAFrameHeads(t, dir, s, "whole", "part", "two", "one/model-ema")
	// A bad parameter is refused before anything is written.
	refusedBeforeWriting(t, filepath.Join(dir, "bad"), "haf-gamma = 0, want a finite value > 0",
		append(args("bad", "1"), "--param", "haf-gamma=0")...)
	// So is a model whose features cannot hold the 10 class vectors (the
	// trainer finds it at the first plan, before the run folder is made).
	narrow := filepath.Join(dir, "narrow")
	refusedBeforeWriting(t, narrow, "want a model whose head's input is at least 10 wide",
		"train", "--synsets", "fashion-mnist", "--model", "mlp:hidden=4", "--fraction", "0.02", "--epochs", "1",
		"--threads", "1", "--no-store", "--strategy", "haframe", "--matrix", sim, "--out", narrow)
}

// refusedBeforeWriting runs lcl with args and wants it to fail saying want,
// leaving no out behind: a refusal happens before anything is written.
func refusedBeforeWriting(t *testing.T, out, want string, args ...string) {
	t.Helper()
	code, _, errs := runLCL(context.Background(), t, args...)
	if code == 0 || !strings.Contains(errs, want) {
		t.Errorf("lcl %s: exit %d, %q; want a refusal saying %q", strings.Join(args, " "), code, errs, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused run left %s behind (%v)", out, err)
	}
}

// haframe's frame-model trains another architecture than the run's: the
// weights record it as their lcl.model, so lcl eval rebuilds them (the
// run's mlp:hidden=2 could not hold 4 class vectors at all).
func TestTrainHAFrameFrameModel(t *testing.T) {
	dir := t.TempDir()
	sim := filepath.Join(dir, "sim.npy")
	if err := npy.WriteFile(sim, 4, 4, []float64{1, .5, 0, 0, .5, 1, 0, 0, 0, 0, 1, .5, 0, 0, .5, 1}); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if code, out, errs := runLCL(context.Background(), t, "train", "--data", synth, "--model", "mlp:hidden=2", "--epochs", "1",
		"--batch", "16", "--threads", "1", "--no-store", "--strategy", "haframe", "--matrix", sim,
		"--param", "frame-model=mlp:hidden=8", "--out", run); code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	weights := filepath.Join(run, "model.safetensors")
	meta, err := safetensors.ReadMeta(weights)
	if err != nil || meta["lcl.model"] != "mlp:hidden=8" {
		t.Fatalf("lcl.model %q (%v), want the stage's mlp:hidden=8", meta["lcl.model"], err)
	}
	if code, out, errs := runLCL(context.Background(), t, "eval", "--checkpoint", weights, "--threads", "1"); code != 0 ||
		!strings.Contains(out, "top-1") {
		t.Errorf("eval: exit %d\n%s\n%s", code, out, errs)
	}
}

// HAFrame's projection (the models' proj option) as the frame model: a
// run whose own model is too narrow for the 10 class vectors
// (mlp:hidden=4, refused in TestTrainHAFrame) trains with frame-model
// mlp:hidden=4,proj=10. The weights hold the projection (its PReLU slopes
// trained away from their start, 0.25) and HAFrame's fixed head on its 10
// outputs; lcl eval rebuilds the model from their lcl.model.
func TestTrainHAFrameProjection(t *testing.T) {
	dir := t.TempDir()
	sim, s := twoGroupMatrix(t, dir)
	const model = "mlp:hidden=4,proj=10"
	if code, out, errs := runLCL(context.Background(), t, "train", "--data", synth10, "--model", "mlp:hidden=4",
		"--epochs", "2", "--batch", "50", "--schedule", "constant", "--lr", "0.05", "--threads", "1", "--no-store",
		"--strategy", "haframe", "--matrix", sim, "--param", "frame-model="+model, "--out", filepath.Join(dir, "proj")); code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	weights := filepath.Join(dir, "proj", "model.safetensors")
	if meta, err := safetensors.ReadMeta(weights); err != nil || meta["lcl.model"] != model {
		t.Fatalf("lcl.model %q (%v), want %s", meta["lcl.model"], err, model)
	}
	checkHAFrameHeads(t, dir, s, "proj")
	w := readWeights(t, weights)
	if got := len(w["fc.weight"]) / 4; got != 10*10 {
		t.Errorf("fc.weight has %d values, want 10×10 (the projection's 10 outputs)", got)
	}
	moved := 0
	for _, k := range []string{"projection.residual_layer1.act_func1.weight", "projection.residual_layer2.act_func2.weight"} {
		if len(w[k]) != 4*10 {
			t.Fatalf("%s: %d bytes, want 10 slopes", k, len(w[k]))
		}
		for i := range 10 {
			if f32(w[k], i) != 0.25 {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Error("no PReLU slope of the projection moved from 0.25 in training")
	}
	if code, out, errs := runLCL(context.Background(), t, "eval", "--checkpoint", weights, "--threads", "1"); code != 0 ||
		!strings.Contains(out, "top-1") {
		t.Errorf("eval: exit %d\n%s\n%s", code, out, errs)
	}
}

// threeLevelMatrix writes dir/sim3.npy: 10 classes in pairs and triples
// ({0,1}, {2,3,4}, {5,6}, {7,8,9}: similarity 0.8) inside two groups (0–4,
// 5–9: 0.5), 0 across: HAF's levels of 4 and 2 groups.
func threeLevelMatrix(t *testing.T, dir string) string {
	t.Helper()
	sim := filepath.Join(dir, "sim3.npy")
	small := []int{0, 0, 1, 1, 1, 2, 2, 3, 3, 3}
	s := make([]float64, 100)
	for i := range 10 {
		for j := range 10 {
			switch {
			case i == j:
				s[i*10+j] = 1
			case small[i] == small[j]:
				s[i*10+j] = 0.8
			case i/5 == j/5:
				s[i*10+j] = 0.5
			}
		}
	}
	if err := npy.WriteFile(sim, 10, 10, s); err != nil {
		t.Fatal(err)
	}
	return sim
}

// lcl train --strategy haf on a three-level hierarchy: its level heads are
// part of the models, so a continued run equals an uninterrupted one (the
// heads and their momentum in the checkpoint), with mixing; two
// data-parallel workers train the first epoch as one process does (to
// 1e-3 of the loss, as hxe's: each worker pairs its own examples for the
// dissimilarity term, whose margin dominates it); the final weights, the
// moving average's too, hold the plain model (lcl eval reads them), the
// checkpoint the heads; a bad parameter is refused before anything is
// written.
func TestTrainHAF(t *testing.T) {
	t.Setenv("LCL_TEST_CLI", "1") // the test binary stands in for lcl in the workers
	dir := t.TempDir()
	sim := threeLevelMatrix(t, dir)
	args := synth10Args(dir, sim, "--strategy", "haf")
	trainResumedAndParallel(t, args, "--ema-decay", "0.9")
	sameEpochs(t, filepath.Join(dir, "part"), filepath.Join(dir, "whole"), 2)
	sameFirstEpochLoss(t, dir)
	for _, file := range []string{"whole/model.safetensors", "two/model.safetensors", "one/model-ema.safetensors"} {
		for name := range readWeights(t, filepath.Join(dir, file)) {
			if strings.Contains(name, "level_heads") {
				t.Errorf("%s holds %s: the final weights are the plain model", file, name)
			}
		}
	}
	ck := readWeights(t, filepath.Join(dir, "whole", "checkpoint.safetensors"))
	for _, name := range []string{"peer0/level_heads.1.weight", "peer0/level_heads.2.bias"} {
		if _, ok := ck[name]; !ok {
			t.Errorf("the checkpoint lacks %s", name)
		}
	}
	if _, ok := ck["peer0/level_heads.3.weight"]; ok {
		t.Errorf("the checkpoint holds a third level head: the matrix has two levels below its root")
	}
	for _, file := range []string{"whole/model.safetensors", "whole/checkpoint.safetensors"} {
		if code, out, errs := runLCL(context.Background(), t, "eval", "--checkpoint", filepath.Join(dir, file), "--threads", "1"); code != 0 ||
			!strings.Contains(out, "top-1") {
			t.Errorf("eval %s: exit %d\n%s\n%s", file, code, out, errs)
		}
	}
	refusedBeforeWriting(t, filepath.Join(dir, "bad"), "dissimilar = -1, want a finite value ≥ 0",
		append(args("bad", "1"), "--param", "dissimilar=-1")...)
}

// checkHAFrameHeads: the heads of the runs under dir (a run "R/model-ema":
// its moving average's) are HAFrame's: a zero bias and class vectors whose
// cosines are the published S of the distances 1 − s (γ 2).
func checkHAFrameHeads(t *testing.T, dir string, s []float64, runs ...string) {
	t.Helper()
	d := mat.NewSymDense(10, nil)
	for i := range 10 {
		for j := i + 1; j < 10; j++ {
			d.SetSym(i, j, 1-s[i*10+j])
		}
	}
	S, _, err := strategy.HAFrameSimilarity(d, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		file := filepath.Join(dir, run, "model.safetensors")
		if strings.HasSuffix(run, "-ema") {
			file = filepath.Join(dir, run+".safetensors")
		}
		w := readWeights(t, file)
		for i := range 10 {
			if b := f32(w["fc.bias"], i); b != 0 {
				t.Errorf("%s: fc.bias[%d] = %g, want 0", run, i, b)
			}
		}
		width := len(w["fc.weight"]) / 4 / 10
		row := func(i int) []float64 {
			out := make([]float64, width)
			for k := range out {
				out[k] = float64(f32(w["fc.weight"], i*width+k))
			}
			return out
		}
		for i := range 10 {
			for j := range 10 {
				a, b := row(i), row(j)
				var ab, aa, bb float64
				for k := range a {
					ab, aa, bb = ab+a[k]*b[k], aa+a[k]*a[k], bb+b[k]*b[k]
				}
				if c := ab / math.Sqrt(aa*bb); math.Abs(c-S.At(i, j)) > 1e-5 {
					t.Errorf("%s: cosine of class vectors %d, %d = %.7g, HAFrame's S %.7g", run, i, j, c, S.At(i, j))
				}
			}
		}
	}
}

// A run that finishes while another lcl holds the store waits for it and
// records the run; one whose store stays held past the wait exits 1 with
// one line naming the run, its folder and the store. Never exit 0 with the
// record lost (issue 48, item 3).
func TestTrainRecordsItsRunWhenTheStoreIsBusy(t *testing.T) {
	defer func(w time.Duration) { recordWait = w }(recordWait)
	for _, tc := range []struct {
		name    string
		release bool // the other lcl lets go of the store a moment after the run finished
	}{{"released", true}, {"held", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store, run := filepath.Join(dir, "store"), filepath.Join(dir, "run")
			held, err := simstore.Open(store) // the other lcl
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			recordWait = 30 * time.Second
			if !tc.release {
				recordWait = 300 * time.Millisecond
			}
			type result struct {
				code     int
				out, err string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errs := runLCL(context.Background(), t, "--store", store, "train", "--data", synth, "--model", "mlp:hidden=8",
					"--epochs", "1", "--batch", "16", "--threads", "1", "--out", run)
				done <- result{code, out, errs}
			}()
			var r result
			if tc.release {
				for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					if _, err := os.Stat(filepath.Join(run, experiment.ResultFile)); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the run never finished")
					}
				}
				time.Sleep(300 * time.Millisecond)
				held.Close()
			}
			r = <-done
			held.Close()
			st, err := simstore.Open(store, simstore.ReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			runs, err := st.ListRuns(context.Background())
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			if tc.release {
				if r.code != 0 || len(runs) != 1 || runs[0].Status != simstore.RunDone || !strings.Contains(r.err, "in use by another lcl: waiting up to 30s") {
					t.Fatalf("lcl train finishing while another lcl held its store for 0.3 s: exit %d, %d records %+v; want exit 0, the run recorded after a line saying it waits\n%s", r.code, len(runs), runs, r.err)
				}
				return
			}
			last := r.err[strings.LastIndex(strings.TrimSuffix(r.err, "\n"), "\n")+1:]
			if r.code != ExitFailure || len(runs) != 0 || !strings.Contains(last, "lcl: run r") || !strings.Contains(last, "finished in "+run+" but is not recorded in the store "+store) {
				t.Fatalf("lcl train finishing while another lcl held its store past the wait: exit %d, %d records; want exit 1 and a last line naming the run, %s and the store\n%s", r.code, len(runs), run, r.err)
			}
		})
	}
}

// sameFirstEpochLoss: the runs "one" (one process) and "two" (two
// data-parallel workers) under dir trained their first epoch alike. The
// workers' summation order differs from one process's, and the difference
// compounds over the epoch's steps (1.3e-4 seen in 24); a wrong
// normalisation or a missing all-reduce differs by percents.
func sameFirstEpochLoss(t *testing.T, dir string) {
	t.Helper()
	one, two := readResult(t, filepath.Join(dir, "one")), readResult(t, filepath.Join(dir, "two"))
	l1, l2 := one.Epochs[0].TrainLoss, two.Epochs[0].TrainLoss
	if !(l1 > 0) || math.Abs(l1-l2) > 1e-3*l1 {
		t.Errorf("epoch 1 train loss: one process %v, two workers %v", l1, l2)
	}
}

// synth10Args are the lcl train arguments of the hierarchy strategies'
// runs under dir on synth10 (a run name and its epochs; strategy the
// strategy's flags, sim its matrix), with a run's own extra flags last.
func synth10Args(dir, sim string, strategy ...string) func(run, epochs string, extra ...string) []string {
	return func(run, epochs string, extra ...string) []string {
		args := []string{"train", "--data", synth10, "--model", "cnn:bn=0", "--epochs", epochs, "--batch", "50",
			"--schedule", "constant", "--lr", "0.05", "--threads", "1", "--no-store"}
		args = append(append(args, strategy...), "--matrix", sim, "--out", filepath.Join(dir, run))
		return append(args, extra...)
	}
}

// TestTrainWarnsOfReferenceBLAS: lcl train on Netlib's reference BLAS (what
// Debian's libtorch gets when nothing installs OpenBLAS) says so, once,
// with the fix; on the system's BLAS (OpenBLAS, scripts/deps.sh) it says
// nothing. lcl bench info names the BLAS in both.
func TestTrainWarnsOfReferenceBLAS(t *testing.T) {
	const netlib = "/usr/lib/x86_64-linux-gnu/blas"
	if _, err := os.Stat(filepath.Join(netlib, "libblas.so.3")); err != nil {
		t.Fatalf("Netlib's BLAS: %v (scripts/deps.sh installs libblas3)", err)
	}
	const warning = "lcl train: libtorch's BLAS is the unoptimised reference one"
	for _, tc := range []struct {
		name string
		env  []string
		warn bool
	}{
		{"system BLAS", nil, false},
		{"Netlib's BLAS", []string{"LD_LIBRARY_PATH=" + netlib}, true},
	} {
		dir := t.TempDir()
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "--store", filepath.Join(dir, "store"), "train", "--data", synth, "--model", "mlp:hidden=16",
			"--epochs", "1", "--batch", "16", "--threads", "1", "--out", filepath.Join(dir, "run"))
		cmd.Env = append(append(os.Environ(), "LCL_TEST_CLI=1"), tc.env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, stderr.String())
		}
		if n := strings.Count(stderr.String(), warning); n != map[bool]int{false: 0, true: 1}[tc.warn] {
			t.Errorf("%s: the warning printed %d times:\n%s", tc.name, n, stderr.String())
		} else if tc.warn && !strings.Contains(stderr.String(), "apt-get install libopenblas0-pthread") {
			t.Errorf("%s: the warning names no fix:\n%s", tc.name, stderr.String())
		}
		// lcl bench info names the BLAS too.
		info := exec.Command(exe, "bench", "info")
		info.Env = cmd.Env
		out, err := info.Output()
		var got struct{ BLAS string }
		if err != nil || json.Unmarshal(out, &got) != nil {
			t.Fatalf("%s: bench info: %v, %s", tc.name, err, out)
		}
		if (got.BLAS == "reference") != tc.warn || got.BLAS == "" {
			t.Errorf("%s: bench info says blas %q", tc.name, got.BLAS)
		}
	}
}
