package runlog

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
)

type event struct {
	Step        int64              `json:"step"`
	FileVersion string             `json:"file_version"`
	SessionLog  string             `json:"session_log"`
	Scalars     map[string]float64 `json:"scalars"`
}

// readEvents reads the event files of dir, in name order as TensorBoard
// does, with the independent reader of internal/tensorboard/testdata
// (its own CRC-32C, python3-protobuf over tensorboard.proto); one list
// per file.
func readEvents(t *testing.T, dir string) [][]event {
	t.Helper()
	py := testdep.PythonModules(t, "google.protobuf")
	reader, err := filepath.Abs(filepath.Join("..", "..", "internal", "tensorboard", "testdata", "read_events.py"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(reader)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	slices.Sort(files)
	q, _ := json.Marshal(reader)
	var out [][]event
	for _, f := range files {
		var evs []event
		for _, line := range strings.Split(strings.TrimSpace(py.Run("__file__ = "+string(q)+"\n"+string(src), f)), "\n") {
			var e event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("%s: %q: %v", f, line, err)
			}
			evs = append(evs, e)
		}
		out = append(out, evs)
	}
	return out
}

func readCSV(t *testing.T, dir string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func near32(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// The step scalars are the means over the examples of every read since
// the previous point, one point every Every steps.
func TestStepPointsByHand(t *testing.T) {
	dir := t.TempDir()
	l := &Log{Dir: dir, Every: 2}
	if err := l.Start(trainer.SinkStart{Stages: []string{"sl"}}); err != nil {
		t.Fatal(err)
	}
	for i, m := range []trainer.StepMetrics{
		{Stage: "sl", GlobalStep: 1, Loss: 2, Top1: 0.5, Examples: 10, LR: 0.1, ImgPerSec: 100},
		{Stage: "sl", GlobalStep: 2, Loss: 1, Top1: 0.25, Examples: 30, LR: 0.2, ImgPerSec: 110},
		{Stage: "sl", GlobalStep: 3, Loss: 4, Top1: 1, Examples: 5, LR: 0.3, ImgPerSec: 120},
	} {
		if err := l.Step(m); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// An epoch of model selection that evaluated the test set, and one that
	// did not (no test figures then, rather than zeros).
	em := trainer.EpochMetrics{Stage: "sl", Epoch: 1, Steps: 3, GlobalStep: 3, LR: 0.3, TargetEntropy: 0.5,
		PeerMetrics: trainer.PeerMetrics{TrainLoss: 1.5, TestTop1: 0.75, TestTop5: 1, TestLoss: 0.25}, Top1: []float64{0.75}, Top5: []float64{1},
		Val: []trainer.HeldOut{{Top1: 0.625, Top5: 1, Loss: 0.5}}, Best: []int{1}}
	untested := trainer.EpochMetrics{Stage: "sl", Epoch: 2, Steps: 3, GlobalStep: 6, LR: 0.1, PeerMetrics: trainer.PeerMetrics{TrainLoss: 1},
		Val: []trainer.HeldOut{{Top1: 0.5, Top5: 1, Loss: 0.75}}, Best: []int{1}}
	for _, e := range []trainer.EpochMetrics{em, untested} {
		if err := l.Epoch(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := readEvents(t, dir)
	if len(files) != 1 {
		t.Fatalf("%d event files", len(files))
	}
	ev := files[0]
	if len(ev) != 5 || ev[0].FileVersion != "brain.Event:2" || ev[1].SessionLog != "START" || ev[1].Step != 0 {
		t.Fatalf("events %+v", ev)
	}
	// Steps 1-2: (2·10 + 1·30)/40 = 1.25, hits (5 + 7.5)/40 = 0.3125.
	p := ev[2]
	if p.Step != 2 || !near32(p.Scalars["train/loss"], 1.25) || !near32(p.Scalars["train/top1"], 0.3125) ||
		!near32(p.Scalars["train/lr"], 0.2) || p.Scalars["train/img_per_s"] != 110 {
		t.Errorf("step point %+v", p)
	}
	e := ev[3]
	if e.Step != 3 || e.Scalars["epoch/train_loss"] != 1.5 || e.Scalars["epoch/test_top1"] != 0.75 || e.Scalars["epoch/test_loss"] != 0.25 ||
		e.Scalars["epoch/val_top1"] != 0.625 || e.Scalars["epoch/best_epoch"] != 1 || e.Scalars["epoch/epoch"] != 1 ||
		e.Scalars["epoch/target_entropy"] != 0.5 || len(e.Scalars) != 13 {
		t.Errorf("epoch point %+v", e)
	}
	if u := ev[4]; u.Step != 6 || u.Scalars["epoch/val_loss"] != 0.75 || len(u.Scalars) != 10 {
		t.Errorf("an epoch without test: %+v", u)
	} else if _, ok := u.Scalars["epoch/test_top1"]; ok {
		t.Errorf("an epoch without test logs test figures: %+v", u)
	}
	rows := readCSV(t, dir)
	col := columns(t, rows[0])
	if len(rows) != 3 || rows[1][0] != "sl" || rows[1][col["global_step"]] != "3" || rows[1][col["test_top1"]] != "0.75" ||
		rows[1][col["val_top1"]] != "0.625" || rows[2][col["test_top1"]] != "" || rows[2][col["val_loss"]] != "0.75" || rows[2][col["ema_val_top1"]] != "" {
		t.Errorf("csv %q", rows)
	}
}

// columns maps a CSV header's names to their indices.
func columns(t *testing.T, header []string) map[string]int {
	t.Helper()
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, want := range []string{"stage", "epoch", "global_step", "lr", "train_loss", "train_top1", "test_loss", "test_top1", "test_top5",
		"test_mistake_severity", "test_hdist1", "test_hdist5", "test_hdist20",
		"val_loss", "val_top1", "val_top5", "ema_test_top1", "ema_val_top1", "best_epoch", "target_entropy", "img_per_s", "seconds", "eval_seconds"} {
		if _, ok := col[want]; !ok {
			t.Errorf("csv header %q lacks %s", header, want)
		}
	}
	return col
}

// sl is one-hot supervised learning for the run below.
type sl struct{}

func (sl) Stages() []trainer.Stage { return []trainer.Stage{{Name: "sl"}} }
func (sl) Plan(context.Context, trainer.PlanContext) (trainer.Plan, error) {
	return trainer.Plan{Coefs: trainer.Coefs{HardCE: 1}}, nil
}

// A run cancelled in its second epoch and resumed: the CSV is the run's
// metrics.jsonl, the event files hold its figures at the run's global
// steps, and the resumed file starts at the step of the checkpoint, so
// that TensorBoard drops what the first file logged after it.
func TestLogOfAResumedRun(t *testing.T) {
	train, test, err := data.Open("synthetic?n=48&test=16&classes=3&shape=1,4,4")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := func() trainer.Config {
		return trainer.Config{Out: dir, Model: "mlp", Train: train, Test: test, BatchSource: data.BatchSource(data.LoaderConfig{Workers: 1}),
			Planner: sl{}, Strategy: "sl", Seed: 1, Threads: 1, CheckpointEvery: 1, MetricsEvery: 1,
			Optim: trainer.Optim{Epochs: 3, Batch: 8, Momentum: 0.9, Schedule: trainer.Schedule{Kind: "cosine", LR: 0.05}},
			Sink:  &Log{Dir: dir, Every: 2}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := cfg()
	c.Progress = func(p trainer.Progress) {
		if p.Epoch == 2 && p.Step == 3 {
			cancel()
		}
	}
	if _, err := trainer.Run(ctx, c); !errors.Is(err, trainer.ErrCanceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	c = cfg()
	c.Resume = true
	if _, err := trainer.Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}

	var lines []trainer.EpochMetrics
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var em trainer.EpochMetrics
		if err := json.Unmarshal(sc.Bytes(), &em); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, em)
	}
	f.Close()
	// 48 examples in batches of 8: 6 steps an epoch.
	if len(lines) != 3 || lines[0].Steps != 6 || lines[2].GlobalStep != 18 {
		t.Fatalf("metrics.jsonl: %d lines, steps %d, last global step %d", len(lines), lines[0].Steps, lines[len(lines)-1].GlobalStep)
	}
	rows := readCSV(t, dir)
	if len(rows) != 4 {
		t.Fatalf("csv has %d rows, want a header and 3 epochs: %q", len(rows), rows)
	}
	col := columns(t, rows[0])
	for i, em := range lines {
		r := rows[i+1]
		if r[col["epoch"]] != strconv.Itoa(em.Epoch) || r[col["global_step"]] != strconv.FormatInt(em.GlobalStep, 10) ||
			r[col["test_top1"]] != strconv.FormatFloat(em.TestTop1, 'g', -1, 64) || r[col["train_loss"]] != strconv.FormatFloat(em.TrainLoss, 'g', -1, 64) {
			t.Errorf("csv row %d %q, metrics.jsonl %+v", i+1, r, em)
		}
	}

	files := readEvents(t, dir)
	if len(files) != 2 {
		t.Fatalf("%d event files, want one per start", len(files))
	}
	// The resumed run continues at epoch 2 step 3: global step 9.
	if s := files[1][1]; s.SessionLog != "START" || s.Step != 9 {
		t.Errorf("the resumed file starts with %+v, want START at step 9", s)
	}
	// What TensorBoard shows: the first file's points before step 9, then
	// the second file's.
	epochAt := map[int64]float64{}
	var trainSteps []int64
	for k, evs := range files {
		for _, e := range evs {
			if k == 0 && e.Step >= 9 {
				continue
			}
			if v, ok := e.Scalars["epoch/test_top1"]; ok {
				epochAt[e.Step] = v
			}
			if _, ok := e.Scalars["train/loss"]; ok {
				trainSteps = append(trainSteps, e.Step)
			}
		}
	}
	for _, em := range lines {
		if v, ok := epochAt[em.GlobalStep]; !ok || !near32(v, em.TestTop1) {
			t.Errorf("epoch %d: test top-1 at step %d is %v (%v), metrics.jsonl %v", em.Epoch, em.GlobalStep, v, ok, em.TestTop1)
		}
	}
	if want := []int64{2, 4, 6, 8, 11, 13, 15, 17}; !slices.Equal(trainSteps, want) {
		t.Errorf("step points at %v, want %v", trainSteps, want)
	}
}

// With model selection the test set is evaluated once, after the last
// epoch: its figures (of the selected weights) and the selected epoch go to
// the events as final/…, at the run's last step.
func TestLogFinalOfASelection(t *testing.T) {
	train, test, err := data.Open("synthetic?n=48&test=16&classes=3&shape=1,4,4")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := trainer.Run(context.Background(), trainer.Config{Out: dir, Model: "mlp", Train: train, Test: test,
		BatchSource: data.BatchSource(data.LoaderConfig{Workers: 1}), Planner: sl{}, Strategy: "sl", Seed: 1, Threads: 1,
		Optim:          trainer.Optim{Epochs: 3, Batch: 8, Momentum: 0.9, Schedule: trainer.Schedule{Kind: "constant", LR: 0.05}},
		ModelSelection: trainer.ModelSelection{ValFraction: 0.25}, Sink: &Log{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	files := readEvents(t, dir)
	if len(files) != 1 {
		t.Fatalf("%d event files", len(files))
	}
	ev := files[0]
	last, end := ev[len(ev)-1], res.Epochs[len(res.Epochs)-1].GlobalStep
	f := res.Final[0]
	if last.Step != end || len(last.Scalars) != 4 || !near32(last.Scalars["final/test_top1"], f.TestTop1) ||
		!near32(last.Scalars["final/test_top5"], f.TestTop5) || !near32(last.Scalars["final/test_loss"], f.TestLoss) ||
		last.Scalars["final/selected_epoch"] != float64(res.Selection.Epochs[0]) {
		t.Errorf("last event %+v; want the final figures %+v of epoch %d at step %d", last, f, res.Selection.Epochs[0], end)
	}
	for _, e := range ev[:len(ev)-1] {
		if _, ok := e.Scalars["epoch/test_top1"]; ok {
			t.Errorf("an epoch of model selection logs test figures: %+v", e)
		}
	}
}
