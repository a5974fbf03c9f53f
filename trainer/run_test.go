package trainer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/safetensors"
	"github.com/lcl-project/lcl/trainer/torch"
)

// SL is standard supervised learning (one stage, one model, one-hot
// targets): the planner of most tests here. The strategies lcl trains with
// come from plugins/strategy through curriculum.
type SL struct{}

func (SL) Stages() []Stage { return []Stage{{Name: "train"}} }

func (SL) Plan(context.Context, PlanContext) (Plan, error) {
	return Plan{Coefs: Coefs{HardCE: 1}}, nil
}

func testConfig(t *testing.T, out string) Config {
	t.Helper()
	return Config{
		Out: out, Model: "mlp:hidden=32", Train: blobs(240, 4, 6, 1), Test: blobs(120, 4, 6, 2), BatchSource: memLoader,
		Planner: SL{}, Strategy: "sl", Seed: 1, Threads: 1, CheckpointEvery: 1,
		Optim: Optim{Epochs: 4, Batch: 32, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4,
			Schedule: Schedule{Kind: "cosine", LR: 0.05, Warmup: 1}},
	}
}

func TestRunLearnsAndWritesRunDir(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), testConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Epochs) != 4 || len(res.Final) != 1 {
		t.Fatalf("epochs %d, final %d", len(res.Epochs), len(res.Final))
	}
	if f := res.Final[0]; f.TestTop1 < 0.9 || f.TestTop5 != 1 || f.TrainLoss >= res.Epochs[0].TrainLoss {
		t.Errorf("final %+v after first epoch %+v", f, res.Epochs[0].PeerMetrics)
	}
	lines := 0
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var m struct {
			MessageType   string    `json:"message_type"`
			TestTop1      float64   `json:"test_top1"`
			Top1          []float64 `json:"top1"`
			Top5          []float64 `json:"top5"`
			TargetEntropy *float64  `json:"target_entropy"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.MessageType != "epoch" || len(m.Top1) != 1 || m.Top1[0] != m.TestTop1 || len(m.Top5) != 1 || m.TargetEntropy == nil || *m.TargetEntropy != 0 {
			t.Errorf("metrics line %q: want message_type epoch, top1 = [test_top1], target_entropy 0 (one-hot)", sc.Text())
		}
	}
	if lines != 4 {
		t.Errorf("%d metrics lines, want 4", lines)
	}
	b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	ts, meta, err := safetensors.Read(b)
	if err != nil || meta["lcl.model"] != "mlp:hidden=32" || meta["lcl.seed"] != "1" || len(ts) != 4 || ts[0].Name != "fc.bias" {
		t.Errorf("weights: %v %v %d", err, meta, len(ts))
	}
	var result struct{ Top1, Top5 []float64 }
	if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err != nil || json.Unmarshal(b, &result) != nil ||
		len(result.Top1) != 1 || result.Top1[0] != res.Final[0].TestTop1 || len(result.Top5) != 1 {
		t.Errorf("result.json: %v %+v, want top1 = [final test top-1]", err, result)
	}
	// The weights load back into a fresh model and evaluate identically.
	m, err := torch.NewModel(mlp32(t), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := LoadWeights(filepath.Join(dir, "model.safetensors"), m); err != nil {
		t.Fatal(err)
	}
	test := blobs(120, 4, 6, 2)
	var x []float32
	var y []int64
	for i := range test.Len() {
		x, y = append(x, test.x[i]...), append(y, int64(test.y[i]))
	}
	ev := evalOn(t, m, torch.Input{X: x, N: test.Len(), C: 1, H: 6, W: 6, Y: y}, false)
	if got := float64(ev.Top1) / 120; got != res.Final[0].TestTop1 {
		t.Errorf("reloaded top-1 %v, run reported %v", got, res.Final[0].TestTop1)
	}
}

func sameMetrics(t *testing.T, a, b []EpochMetrics) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d epochs vs %d", len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].PeerMetrics, b[i].PeerMetrics) || a[i].LR != b[i].LR {
			t.Errorf("epoch %d: %+v %+v vs %+v %+v", i+1, a[i].PeerMetrics, a[i].TestHier, b[i].PeerMetrics, b[i].TestHier)
		}
	}
}

func readMetrics(t *testing.T, dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestResumeEqualsUninterrupted(t *testing.T) {
	// With a hierarchy: its metrics are in the history a resume reads back.
	hierConfig := func(t *testing.T, dir string) Config {
		c := testConfig(t, dir)
		c.Hierarchy = shardCost
		return c
	}
	whole, err := Run(context.Background(), hierConfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if whole.Epochs[0].TestHier == nil {
		t.Fatal("no hierarchical metrics in a run with a hierarchy")
	}

	t.Run("cancelled mid-epoch", func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		cfg := hierConfig(t, dir)
		cfg.Progress = func(p Progress) {
			if p.Epoch == 3 && p.Step == 3 {
				cancel()
			}
		}
		_, err := Run(ctx, cfg)
		if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled run: %v", err)
		}
		cfg = hierConfig(t, dir)
		cfg.Resume = true
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		sameMetrics(t, whole.Epochs, res.Epochs)
		if n := len(readMetrics(t, dir)); n != 4 {
			t.Errorf("%d metrics lines after resume, want 4", n)
		}
	})

	t.Run("cancelled after the last step of epoch 2", func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		cfg := hierConfig(t, dir)
		cfg.Progress = func(p Progress) {
			if p.Epoch == 2 && p.Step == p.Steps {
				cancel()
			}
		}
		if _, err := Run(ctx, cfg); !errors.Is(err, ErrCanceled) {
			t.Fatalf("cancelled run: %v", err)
		}
		cfg = hierConfig(t, dir)
		cfg.Resume = true
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		sameMetrics(t, whole.Epochs, res.Epochs)
	})

	t.Run("killed after epoch 2", func(t *testing.T) {
		// Save the checkpoint as it was during epoch 3, let the run finish,
		// put the old checkpoint back: the state a kill -9 leaves.
		dir := t.TempDir()
		cfg := hierConfig(t, dir)
		var saved []byte
		cfg.Progress = func(p Progress) {
			if p.Epoch == 3 && p.Step == 1 {
				saved, _ = os.ReadFile(filepath.Join(dir, checkpointName))
			}
		}
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		// The checkpoint records the size of metrics.jsonl after epoch 2.
		_, meta, err := safetensors.Read(saved)
		if err != nil {
			t.Fatal(err)
		}
		var st checkpointState
		if err := json.Unmarshal([]byte(meta["lcl.checkpoint"]), &st); err != nil {
			t.Fatal(err)
		}
		lines := readMetrics(t, dir)
		if want := int64(len(lines[0]) + len(lines[1]) + 2); st.MetricsBytes != want {
			t.Fatalf("checkpoint after epoch 2 records %d bytes of metrics, the first two lines are %d", st.MetricsBytes, want)
		}
		if err := os.WriteFile(filepath.Join(dir, checkpointName), saved, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg = hierConfig(t, dir)
		cfg.Resume = true
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		sameMetrics(t, whole.Epochs, res.Epochs)
		if n := len(readMetrics(t, dir)); n != 4 {
			t.Errorf("%d metrics lines after resume, want 4", n)
		}
	})

	t.Run("metrics.jsonl cut since the checkpoint", func(t *testing.T) {
		// A resume must not pad a file shorter than the checkpoint says
		// (nor cut it to zero): it refuses and leaves the file alone.
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		cfg := hierConfig(t, dir)
		cfg.Progress = func(p Progress) {
			if p.Epoch == 3 && p.Step == 2 {
				cancel()
			}
		}
		if _, err := Run(ctx, cfg); !errors.Is(err, ErrCanceled) {
			t.Fatalf("cancelled run: %v", err)
		}
		path := filepath.Join(dir, "metrics.jsonl")
		cut := []byte(readMetrics(t, dir)[0] + "\n")
		if err := os.WriteFile(path, cut, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg = hierConfig(t, dir)
		cfg.Resume = true
		_, err := Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "was cut or replaced") {
			t.Fatalf("resume with a cut metrics.jsonl: %v", err)
		}
		if b, _ := os.ReadFile(path); string(b) != string(cut) {
			t.Fatalf("metrics.jsonl changed by the refused resume: %q", b)
		}
	})
}

func TestBadCheckpointRefused(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig(t, dir)
	cfg.Progress = func(p Progress) {
		if p.Epoch == 2 {
			cancel()
		}
	}
	if _, err := Run(ctx, cfg); !errors.Is(err, ErrCanceled) {
		t.Fatal(err)
	}
	path := filepath.Join(dir, checkpointName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mod  func(*Config)
		file []byte
		want string
	}{
		{"other seed", func(c *Config) { c.Seed = 2 }, good, `seed "1", this run has "2"`},
		{"other model", func(c *Config) { c.Model = "mlp:hidden=16" }, good, "model"},
		{"other strategy", func(c *Config) { c.Strategy = "ls" }, good, "strategy"},
		{"truncated", nil, good[:len(good)-10], "not a valid safetensors"},
		{"weights file", nil, func() []byte {
			var b strings.Builder
			safetensors.Write(&b, nil, map[string]string{"format": "pt"})
			return []byte(b.String())
		}(), "no lcl.checkpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(t, dir)
			cfg.Resume = true
			if tc.mod != nil {
				tc.mod(&cfg)
			}
			_, err := Run(context.Background(), cfg)
			if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrCheckpoint with %q", err, tc.want)
			}
		})
	}
}

// twoStage trains a teacher, then two peers distilling from it with mutual
// learning, soft targets, weights and a subset, asking for the teacher's
// features.
type twoStage struct {
	t        *testing.T
	featDims []int
}

func (p *twoStage) Stages() []Stage {
	return []Stage{{Name: "teacher", Epochs: 2}, {Name: "student", Epochs: 3, Peers: 2, Teacher: "teacher"}}
}

func (p *twoStage) Plan(ctx context.Context, pc PlanContext) (Plan, error) {
	if len(pc.Classes) != pc.NumClasses || pc.Classes[3] != "d" {
		return Plan{}, fmt.Errorf("classes %v", pc.Classes)
	}
	if pc.StageIndex == 0 {
		return Plan{Coefs: Coefs{HardCE: 1}}, nil
	}
	if pc.Epoch == 0 {
		f, err := pc.Features(ctx, "teacher", pc.Train[:10])
		if err != nil {
			return Plan{}, err
		}
		p.featDims = append(p.featDims, len(f), len(f[9]))
	}
	C := pc.NumClasses
	T := make([]float32, C*C)
	for i := range C {
		for j := range C {
			T[i*C+j] = 0.1 / float32(C-1)
		}
		T[i*C+i] = 0.9
	}
	w := make([]float32, 240)
	for i := range w {
		w[i] = 1 + float32(i%2)
	}
	return Plan{Targets: T, Weights: w, Subset: pc.Train[:200],
		Coefs: Coefs{SoftCE: 0.5, KD: 0.5, KDTemperature: 3, Mutual: 1}}, nil
}

func TestStagesTeacherPeersFeatures(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	pl := &twoStage{t: t}
	cfg.Planner = pl
	cfg.Strategy = "test"
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Epochs) != 5 || res.Epochs[2].Stage != "student" || len(res.Epochs[4].Peers) != 2 || len(res.Final) != 2 {
		t.Fatalf("result %+v", res)
	}
	if len(pl.featDims) != 2 || pl.featDims[0] != 10 || pl.featDims[1] != 32 {
		t.Errorf("features %v, want 10 rows of 32", pl.featDims)
	}
	for k, f := range res.Final {
		if f.TestTop1 < 0.8 {
			t.Errorf("peer %d: %+v", k, f)
		}
	}
	if res.Epochs[2].Images != 200 {
		t.Errorf("student epoch saw %d images, want the subset's 200", res.Epochs[2].Images)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "model-peer1.safetensors")); err != nil {
		t.Error(err)
	}
	// Resume from the stage boundary (teacher finished) reaches the same end.
	cfg2 := testConfig(t, t.TempDir())
	cfg2.Planner, cfg2.Strategy = &twoStage{t: t}, "test"
	var saved []byte
	cfg2.Progress = func(p Progress) {
		if p.Stage == "student" && p.Step == 1 && saved == nil {
			saved, _ = os.ReadFile(filepath.Join(cfg2.Out, checkpointName))
		}
	}
	if _, err := Run(context.Background(), cfg2); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(cfg2.Out, checkpointName), saved, 0o644)
	cfg2.Progress, cfg2.Resume, cfg2.Planner = nil, true, &twoStage{t: t}
	res2, err := Run(context.Background(), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	sameMetrics(t, res.Epochs, res2.Epochs)
}

func TestScheduleAt(t *testing.T) {
	cases := []struct {
		s      Schedule
		e      int
		f      float64
		epochs int
		want   float64
	}{
		{Schedule{Kind: "constant", LR: 0.1}, 5, 0, 10, 0.1},
		{Schedule{Kind: "step", LR: 0.1, Gamma: 0.1, StepSize: 30}, 29, 0.9, 90, 0.1},
		{Schedule{Kind: "step", LR: 0.1, Gamma: 0.1, StepSize: 30}, 60, 0, 90, 0.001},
		{Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.2, Milestones: []int{60, 120, 160}}, 59, 0, 200, 0.1},
		{Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.2, Milestones: []int{60, 120, 160}}, 120, 0, 200, 0.004},
		{Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.2, Milestones: []int{60, 120, 160}}, 199, 0, 200, 0.0008},
		{Schedule{Kind: "cosine", LR: 0.1}, 0, 0, 10, 0.1},
		{Schedule{Kind: "cosine", LR: 0.1}, 5, 0, 10, 0.05},
		{Schedule{Kind: "cosine", LR: 0.1, Warmup: 2}, 1, 0, 10, 0.05},
		{Schedule{Kind: "cosine", LR: 0.1, Warmup: 2}, 6, 0, 10, 0.05},
		{Schedule{Kind: "step", LR: 0.1, Gamma: 0.5, StepSize: 1, Warmup: 1}, 0, 0.5, 10, 0.05},
		// --warmup-start-lr: linear from it to LR.
		{Schedule{Kind: "cosine", LR: 0.1, Warmup: 2, WarmupStart: 0.01}, 0, 0, 10, 0.01},
		{Schedule{Kind: "cosine", LR: 0.1, Warmup: 2, WarmupStart: 0.01}, 1, 0, 10, 0.055},
		{Schedule{Kind: "cosine", LR: 0.1, Warmup: 2, WarmupStart: 0.01}, 2, 0, 10, 0.1},
	}
	for _, tc := range cases {
		if got := tc.s.At(tc.e, tc.f, tc.epochs); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v.At(%d, %v) = %v, want %v", tc.s, tc.e, tc.f, got, tc.want)
		}
	}
	for _, bad := range []Schedule{{Kind: "cosine"}, {Kind: "step", LR: 1}, {Kind: "multistep", LR: 1, Gamma: 0.1, Milestones: []int{5, 3}}, {Kind: "poly", LR: 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	for _, p := range Presets() {
		if err := p.Schedule.Validate(); err != nil {
			t.Errorf("preset %s: %v", p.Name, err)
		}
	}
	if p, err := PresetByName("wrn-cifar"); err != nil || p.Epochs != 200 || p.Schedule.Gamma != 0.2 || !p.Nesterov || p.Batch != 128 {
		t.Errorf("wrn-cifar = %+v, %v", p, err)
	}
}

var _ io.Writer = (*strings.Builder)(nil)

func TestMeanRowEntropy(t *testing.T) {
	tests := []struct {
		name string
		t    []float32
		c    int
		want float64
	}{
		{"one-hot", nil, 3, 0},
		{"identity", []float32{1, 0, 0, 1}, 2, 0},
		{"uniform rows", []float32{0.5, 0.5, 0.5, 0.5}, 2, math.Log(2)},
		{"mixed", []float32{1, 0, 0.5, 0.5}, 2, math.Log(2) / 2},
	}
	for _, tt := range tests {
		if got := meanRowEntropy(tt.t, tt.c); math.Abs(got-tt.want) > 1e-7 {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	// Large enough to be summed in parts: 2100 rows of (0.5, 0.25, 0.25, 0…).
	const c = 2100
	big := make([]float32, c*c)
	for i := 0; i < c; i++ {
		big[i*c+i], big[i*c+(i+1)%c], big[i*c+(i+2)%c] = 0.5, 0.25, 0.25
	}
	if got, want := meanRowEntropy(big, c), 1.5*math.Log(2); math.Abs(got-want) > 1e-9 {
		t.Errorf("large: %v, want %v", got, want)
	}
}

// stepPlanner records when it is asked and answers soft targets that differ
// from step to step.
type stepPlanner struct {
	asked []string
	bad   func(pc PlanContext, p *Plan) // when set, spoils the plan of some steps
}

func (*stepPlanner) Stages() []Stage { return []Stage{{Name: "train", PerStep: true}} }

func (p *stepPlanner) Plan(_ context.Context, pc PlanContext) (Plan, error) {
	p.asked = append(p.asked, fmt.Sprintf("%d.%d/%d", pc.Epoch, pc.Step, pc.Steps))
	c := pc.NumClasses
	t := make([]float32, c*c)
	off := float32(0.5) / float32(pc.Epoch*pc.Steps+pc.Step+1) / float32(c-1) // decays every step
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			t[i*c+j] = off
		}
		t[i*c+i] = 1 - off*float32(c-1)
	}
	plan := Plan{Targets: t, Coefs: Coefs{SoftCE: 1}}
	if p.bad != nil {
		p.bad(pc, &plan)
	}
	return plan, nil
}

func TestPerStepStageAsksThePlannerBeforeEveryStep(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Optim.Epochs = 2
	p := &stepPlanner{}
	cfg.Planner, cfg.Strategy = p, "per-step test"
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 240 examples in batches of 32: 8 steps an epoch.
	var want []string
	for e := 0; e < 2; e++ {
		for s := 0; s < 8; s++ {
			want = append(want, fmt.Sprintf("%d.%d/8", e, s))
		}
	}
	if strings.Join(p.asked, " ") != strings.Join(want, " ") {
		t.Fatalf("planner asked at %v, want %v", p.asked, want)
	}
	if res.Final[0].TestTop1 < 0.9 {
		t.Errorf("per-step soft targets did not train: %+v", res.Final[0])
	}
}

// TestPerStepPlanErrors: a per-step plan with weights or a target matrix
// of the wrong size ends the run with an error that says which step
// (1-based, like a failed step's) and what is wrong.
func TestPerStepPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  func(pc PlanContext, p *Plan)
		want string
	}{
		{"weights", func(pc PlanContext, p *Plan) {
			if pc.Step == 2 {
				p.Weights = make([]float32, 5)
			}
		}, `stage "train" epoch 1 step 3: per-step plan: 5 weights for 240 training examples`},
		{"wrong size", func(pc PlanContext, p *Plan) {
			if pc.Step == 4 {
				p.Targets = p.Targets[:7]
			}
		}, `stage "train" epoch 1 step 5: per-step plan: target matrix has 7 values, want 4×4`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, "")
			cfg.NoCheckpoint = true
			cfg.Planner, cfg.Strategy = &stepPlanner{bad: tc.bad}, "per-step test"
			_, err := Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "<nil>") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// mlp32 is the architecture of the runs above ("mlp:hidden=32" on 1×6×6, 4 classes).
func mlp32(t *testing.T) torch.Spec {
	t.Helper()
	s, err := models.Builtin().Get("mlp:hidden=32", models.Input{C: 1, H: 6, W: 6, NumClasses: 4})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every architecture of the paper trains by default with the protocol of
// its own publication; every registered architecture names a preset that
// exists; an unknown model and an unknown preset are errors naming the
// choices.
func TestDefaultPresets(t *testing.T) {
	for _, tc := range []struct {
		model  string
		h      int
		preset string
	}{
		{"resnet18", 224, "imagenet-resnet"}, {"resnet50:stem=cifar", 32, "cifar-resnet"},
		{"wrn-28-10", 32, "wrn-cifar"}, {"resnext101-32x8d", 224, "resnext-imagenet"},
		{"senet154", 224, "senet-imagenet"}, {"inception-resnet-v2", 299, "inception-resnet-v2"},
		{"densenet-bc-190-40", 32, "densenet-cifar"}, {"densenet121", 224, "densenet-imagenet"},
		{"cnn", 28, "fmnist-cnn"}, {"torchscript:/x/resnet.pt", 224, "fmnist-cnn"},
	} {
		got, err := DefaultPreset(tc.model, models.Input{C: 3, H: tc.h, W: tc.h, NumClasses: 10})
		if err != nil || got != tc.preset {
			t.Errorf("DefaultPreset(%q, %d) = %q, %v, want %q", tc.model, tc.h, got, err, tc.preset)
		}
	}
	for _, m := range models.Builtin().List() {
		names := []string{m.Preset}
		if m.LargePreset != "" {
			names = append(names, m.LargePreset)
		}
		for _, name := range names {
			p, err := PresetByName(name)
			if err != nil {
				t.Errorf("model %s: %v", m.Name, err)
				continue
			}
			if err := p.Optim.Validate(); err != nil {
				t.Errorf("preset %s: %v", name, err)
			}
		}
	}
	if _, err := DefaultPreset("resnet19", models.Input{C: 3, H: 32, W: 32, NumClasses: 10}); err == nil ||
		!strings.Contains(err.Error(), `unknown model "resnet19"`) || !strings.Contains(err.Error(), "resnet18") {
		t.Errorf("an unknown model's preset: %v", err)
	}
	if _, err := PresetByName("wrn-cifa"); err == nil || !strings.Contains(err.Error(), `unknown preset "wrn-cifa"`) ||
		!strings.Contains(err.Error(), strings.Join(PresetNames(), ", ")) {
		t.Errorf("an unknown preset: %v", err)
	}
	if p, _ := PresetByName("senet-imagenet"); p.For(1, true, 256, false).Schedule.LR != 0.15 {
		t.Error("senet-imagenet: lr 0.6 for 1024 examples should scale to 0.15 for 256")
	}
}
