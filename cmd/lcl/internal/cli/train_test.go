package cli

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/safetensors"
)

const synth = "synthetic?n=96&test=48&classes=4&shape=1,8,8"

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
		{[]string{"train", "--data", synth, "--schedule", "poly"}, "unknown kind"},
		{[]string{"train", "--data", synth, "--preset", "nope"}, "unknown preset"},
		{[]string{"train", "--data", synth, "--schedule", "multistep", "--milestones", "a"}, "milestones"},
		{[]string{"train", "--data", synth, "--momentum", "0", "--nesterov"}, "nesterov"},
		{[]string{"train", "--data", synth, "--optimizer", "lamb"}, "want sgd, rmsprop, adam, adamw, "},
		{[]string{"train", "--data", synth, "--optimizer", "adamw", "--momentum", "0.9"}, "adamw has no momentum"},
		{[]string{"train", "--data", synth, "--betas", "0.9"}, "--betas"},
		{[]string{"train", "--data", synth, "--betas", "0.9,0.99"}, "--betas: optimizer sgd has no parameter beta1"},
		{[]string{"train", "--data", synth, "--patience", "3"}, "need --val-fraction"},
		{[]string{"train", "--data", synth, "--val-fraction", "1"}, "--val-fraction 1"},
		{[]string{"train", "--data", synth, "--val-fraction", "0.1", "--select", "auc"}, "--select"},
		{[]string{"train", "--data", synth, "--optimizer", "rmsprop", "--nesterov"}, "no Nesterov"},
		{[]string{"eval"}, "--checkpoint"},
		{[]string{"train", "--data", synth, "--model", "resnet5"}, `unknown model "resnet5"; did you mean resnet50`},
		// Strategy parameters are checked before any similarity is looked for.
		{[]string{"train", "--data", synth, "--strategy", "lcl", "--epsilon", "1.5", "--source", "nothing-here"}, "epsilon = 1.5, want a value in (0,1]"},
		{[]string{"train", "--data", synth, "--strategy", "lcl", "--source", "matrix"}, "give it as --matrix FILE.npy"},
		// Checked before a launcher starts its workers: no advice to resume.
		{[]string{"train", "--data", synth, "--nproc", "2", "--fraction", "2"}, "--fraction 2: want 0 < fraction ≤ 1"},
		{[]string{"train", "--config", "/nonexistent.yaml"}, "--config: open /nonexistent.yaml"},
	}
	for _, tc := range cases {
		code, _, errs := runLCL(context.Background(), t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "--resume") {
			t.Errorf("%v: exit %d, %q; want usage error with %q", tc.args, code, errs, tc.want)
		}
	}
	// A folder that is not there is named, with the kinds a spec may name.
	if code, _, errs := runLCL(context.Background(), t, "train", "--data", "/nonexistent"); code != 1 ||
		errs != "lcl: --data /nonexistent: no such folder (give a data set folder, or a spec KIND[:DIR] with KIND one of fashion-mnist, mnist, cifar10, cifar100, folder, cub, nabirds, synthetic)\n" {
		t.Errorf("--data /nonexistent: exit %d, %q", code, errs)
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
	if code, _, errs := runLCL(context.Background(), t, "train", "--config", cfg); code != 2 || !strings.Contains(errs, "line 2: field models not found") {
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
