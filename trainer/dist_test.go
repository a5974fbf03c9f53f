package trainer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

// runGroup runs cfg on every rank of a loopback group of size, one
// goroutine per rank (each with its own process group, as processes would).
func runGroup(t *testing.T, size int, cfg func(rank int) Config) ([]*Result, []error) {
	t.Helper()
	res := make([]*Result, size)
	_, errs := runGroupFn(t, size, func(r int, g *torch.Group) error {
		c := cfg(r)
		c.Group = g
		var err error
		res[r], err = Run(context.Background(), c)
		return err
	})
	return res, errs
}

// runGroupFn runs fn on every rank of a loopback group of size, one
// goroutine per rank (each with its own process group).
func runGroupFn(t *testing.T, size int, fn func(rank int, g *torch.Group) error) (int, []error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() {
			g, err := torch.NewGroup(torch.GroupConfig{Addr: "127.0.0.1", Port: port, Rank: r, Size: size, Timeout: time.Minute})
			if err != nil {
				errs[r] = err
				return
			}
			defer g.Close()
			errs[r] = fn(r, g)
		})
	}
	wg.Wait()
	return port, errs
}

func weightsOf(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	m, err := torch.NewModel(mlp32(t), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := LoadWeights(path, m); err != nil {
		t.Fatal(err)
	}
	return stateFloats(t, m)
}

// stateFloats is m's state: its float32 tensors by name.
func stateFloats(t *testing.T, m *torch.Model) map[string][]float32 {
	t.Helper()
	st, err := m.State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, n := range st {
		if n.DType != torch.Float32 {
			continue
		}
		v := make([]float32, len(n.Data)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(n.Data[4*i:]))
		}
		out[n.Name] = v
	}
	return out
}

// weightedSL plans soft targets, per-example weights and a subset, so the
// data-parallel loss normalisation and the plan broadcast are exercised.
type weightedSL struct{ calls int }

func (*weightedSL) Stages() []Stage { return []Stage{{Name: "train"}} }
func (p *weightedSL) Plan(_ context.Context, pc PlanContext) (Plan, error) {
	p.calls++
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
		w[i] = 1 + float32(i%3)
	}
	return Plan{Targets: T, Weights: w, Subset: pc.Train[:230], Coefs: Coefs{SoftCE: 1}}, nil
}

// perStepSubset is a per-step strategy whose plans from step 1 on keep
// half of the examples (a different half every step) and weigh them.
type perStepSubset struct{}

func (perStepSubset) Stages() []Stage { return []Stage{{Name: "train", PerStep: true}} }
func (perStepSubset) Plan(_ context.Context, pc PlanContext) (Plan, error) {
	if pc.Step == 0 {
		return Plan{Coefs: Coefs{HardCE: 1}}, nil
	}
	var sub []int
	w := make([]float32, 240)
	for _, i := range pc.Train {
		if (i+pc.Step)%2 == 0 {
			sub = append(sub, i)
		}
		w[i] = 1 + float32(i%3)
	}
	return Plan{Subset: sub, Weights: w, Coefs: Coefs{HardCE: 1}}, nil
}

// TestDataParallelEqualsSingleProcess: two ranks over the same global
// batches end with the single process's weights and metrics; only rank 0
// writes the run directory and only rank 0 plans.
func TestDataParallelEqualsSingleProcess(t *testing.T) {
	for _, name := range []string{"sl", "weighted", "per-step subset"} {
		t.Run(name, func(t *testing.T) {
			planner := func() Planner {
				switch name {
				case "sl":
					return SL{}
				case "per-step subset":
					return perStepSubset{}
				}
				return &weightedSL{}
			}
			one := t.TempDir()
			cfg := testConfig(t, one)
			cfg.Optim.Epochs = 2
			cfg.Planner = planner()
			ref, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			dirs := []string{t.TempDir(), t.TempDir()}
			planners := []Planner{planner(), planner()}
			res, errs := runGroup(t, 2, func(r int) Config {
				c := testConfig(t, dirs[r])
				c.Optim.Epochs = 2
				c.Planner = planners[r]
				return c
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			if w, ok := planners[1].(*weightedSL); ok && w.calls != 0 {
				t.Errorf("rank 1 planned %d times, want 0 (rank 0's plan is broadcast)", w.calls)
			}
			want := weightsOf(t, filepath.Join(one, "model.safetensors"))
			got := weightsOf(t, filepath.Join(dirs[0], "model.safetensors"))
			for n, wv := range want {
				for i := range wv {
					if d := math.Abs(float64(got[n][i] - wv[i])); d > 1e-5 {
						t.Fatalf("%s[%d]: 2 ranks %v, 1 process %v", n, i, got[n][i], wv[i])
					}
				}
			}
			for e := range ref.Epochs {
				a, b := ref.Epochs[e], res[0].Epochs[e]
				if a.Images != b.Images || math.Abs(a.TrainLoss-b.TrainLoss) > 1e-5 || a.TrainTop1 != b.TrainTop1 ||
					a.TestTop1 != b.TestTop1 || math.Abs(a.TestLoss-b.TestLoss) > 1e-5 {
					t.Errorf("epoch %d: 2 ranks %+v, 1 process %+v", e+1, b, a)
				}
			}
			if entries, _ := os.ReadDir(dirs[1]); len(entries) != 0 {
				t.Errorf("rank 1 wrote %d files in its run directory", len(entries))
			}
		})
	}
}

// TestDataParallelResume: a group resumes from rank 0's checkpoint (rank 1
// has no run directory) and ends where a single uninterrupted process does.
func TestDataParallelResume(t *testing.T) {
	one := t.TempDir()
	cfg := testConfig(t, one)
	cfg.Optim.Epochs = 3
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// A single process stopped (Ctrl-C) after epoch 1 leaves a checkpoint.
	part := t.TempDir()
	c1 := testConfig(t, part)
	c1.Optim.Epochs = 3
	ctx, cancel := context.WithCancel(context.Background())
	c1.OnEpoch = func(m EpochMetrics) {
		if m.Epoch == 1 {
			cancel()
		}
	}
	if _, err := Run(ctx, c1); !errors.Is(err, ErrCanceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	res, errs := runGroup(t, 2, func(r int) Config {
		c := testConfig(t, part)
		c.Optim.Epochs = 3
		c.Resume = true
		if r == 1 {
			c.Out = filepath.Join(part, "rank1-has-no-checkpoint")
		}
		return c
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if len(res[0].Epochs) != 3 {
		t.Fatalf("resumed group has %d epochs", len(res[0].Epochs))
	}
	want := weightsOf(t, filepath.Join(one, "model.safetensors"))
	got := weightsOf(t, filepath.Join(part, "model.safetensors"))
	for n, wv := range want {
		for i := range wv {
			if d := math.Abs(float64(got[n][i] - wv[i])); d > 1e-5 {
				t.Fatalf("%s[%d]: resumed group %v, uninterrupted process %v", n, i, got[n][i], wv[i])
			}
		}
	}
}

func TestPresetForWorld(t *testing.T) {
	goyal, err := PresetByName("goyal")
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := PresetByName("fmnist-cnn")
	for _, tt := range []struct {
		p              Preset
		world          int
		batchSet       bool
		batch          int
		lrSet          bool
		wantB          int
		wantLR         float64
		wantWarm       int
		wantMilestones []int
	}{
		{goyal, 1, false, 0, false, 32, 0.1 * 32 / 256, 5, []int{30, 60, 80}},
		{goyal, 8, false, 0, false, 256, 0.1, 5, []int{30, 60, 80}},
		{goyal, 4, true, 8192, false, 8192, 3.2, 5, []int{30, 60, 80}},
		{goyal, 4, false, 0, true, 128, 0.1, 5, []int{30, 60, 80}}, // --lr given: kept (the flag sets it later)
		{plain, 4, false, 0, false, 128, 0.05, 0, nil},             // other presets do not scale
		{plain, 4, true, 64, false, 64, 0.05, 0, nil},
	} {
		o := tt.p.For(tt.world, tt.batchSet, tt.batch, tt.lrSet)
		if o.Batch != tt.wantB || math.Abs(o.Schedule.LR-tt.wantLR) > 1e-12 || o.Schedule.Warmup != tt.wantWarm ||
			fmt.Sprint(o.Schedule.Milestones) != fmt.Sprint(tt.wantMilestones) && tt.wantMilestones != nil {
			t.Errorf("%s.For(%d, %v, %d, %v) = batch %d lr %v warm-up %d milestones %v", tt.p.Name, tt.world, tt.batchSet,
				tt.batch, tt.lrSet, o.Batch, o.Schedule.LR, o.Schedule.Warmup, o.Schedule.Milestones)
		}
	}
}

// shardCost is a 4-class cost matrix (the blobs' classes) for the
// hierarchical metrics of the sharded evaluation.
var shardCost = matrixCost{c: 4, d: []float64{0, 1, 2, 2, 1, 0, 2, 2, 2, 2, 0, 1, 2, 2, 1, 0}}

// TestShardedEvaluationMatchesOneProcess: the test figures of two ranks,
// each evaluating its slices of the batches, are those of one process, in
// every precision and memory format, the hierarchical metrics included
// (they go through the run's engine,
// autocast included), and bf16's differ from fp32's (so the comparison sees
// the precision).
func TestShardedEvaluationMatchesOneProcess(t *testing.T) {
	const model = "cnn:channels=4x8,fc=16"
	test := blobs(60, 4, 8, 3)
	spec, err := models.Builtin().Get(model, models.Input{C: 1, H: 8, W: 8, NumClasses: 4})
	if err != nil {
		t.Fatal(err)
	}
	newModel := func(cl bool) *torch.Model {
		var m *torch.Model
		err := torch.Seeded(5, func() (err error) {
			m, err = torch.NewModel(spec, "cpu")
			return err
		})
		if err == nil && cl {
			err = m.ChannelsLast()
		}
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	losses := map[torch.Precision]float64{}
	for _, tc := range []struct {
		prec torch.Precision
		cl   bool
	}{{torch.FP32, false}, {torch.BF16, false}, {torch.FP32, true}, {torch.BF16, true}} {
		name := fmt.Sprintf("%v channels-last=%v", tc.prec, tc.cl)
		m := newModel(tc.cl)
		one, err := EvaluateOn(context.Background(), m, test, memLoader, EvalOptions{Batch: 16, Precision: tc.prec, ChannelsLast: tc.cl,
			Hierarchy: shardCost})
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		var two [2]PeerMetrics
		_, errs := runGroupFn(t, 2, func(rank int, g *torch.Group) error {
			cfg := testConfig(t, "")
			cfg.Model, cfg.Train, cfg.Test, cfg.EvalBatch = model, test, test, 16
			cfg.Precision, cfg.ChannelsLast, cfg.Group, cfg.Hierarchy = tc.prec, tc.cl, g, shardCost
			r, err := newRunner(cfg)
			if err != nil {
				return err
			}
			defer r.close()
			m := newModel(tc.cl)
			defer m.Close()
			two[rank], err = r.evaluate(context.Background(), m, r.test)
			return err
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("%s: rank %d: %v", name, r, err)
			}
		}
		if one.TestHier == nil || one.TestHier.HDist5 == 0 {
			t.Fatalf("%s: hierarchical metrics %+v: want some cost", name, one.TestHier)
		}
		for r := range two {
			if two[r].TestTop1 != one.TestTop1 || two[r].TestTop5 != one.TestTop5 ||
				math.Abs(two[r].TestLoss-one.TestLoss) > 1e-6*math.Abs(one.TestLoss) {
				t.Errorf("%s: rank %d of two %+v, one process %+v", name, r, two[r], one)
			}
			// The hierarchical sums are sums of small integers over
			// 1, 5 or the class count: exact up to float64 rounding.
			if h := two[r].TestHier; h == nil || !closeHier(*h, *one.TestHier, 1e-12) {
				t.Errorf("%s: rank %d of two: hierarchical %+v, one process %+v", name, r, h, *one.TestHier)
			}
		}
		if !tc.cl {
			losses[tc.prec] = one.TestLoss
		}
		t.Logf("%s: test loss %.9f (one process), %.9f (two ranks)", name, one.TestLoss, two[0].TestLoss)
	}
	// (Rounding errors of the logits mostly cancel in the mean loss: bf16
	// moves it by about 3e-5 here, 20 times the tolerance above.)
	if d := math.Abs(losses[torch.BF16] - losses[torch.FP32]); d < 1e-5*losses[torch.FP32] {
		t.Errorf("bf16 and fp32 test losses differ by %g only: the test cannot tell them apart", d)
	}
}

// TestDataParallelSelection: two ranks with AdamW, a moving average of the
// weights and a validation split select the epochs one process selects and
// report its figures.
func TestDataParallelSelection(t *testing.T) {
	config := func(dir string) Config {
		c := testConfig(t, dir)
		c.Model = "cnn:channels=4x8,fc=16,bn=0" // no batch norm: the ranks compute what one process does
		c.Optim.Optimizer, c.Optim.Momentum, c.Optim.Nesterov = "adamw", 0, false
		c.Optim.Schedule.LR, c.Optim.EMADecay, c.Optim.Epochs = 0.01, 0.5, 3
		c.ValFraction, c.TestEveryEpoch = 0.25, true
		return c
	}
	ref, err := Run(context.Background(), config(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.TempDir(), t.TempDir()}
	res, errs := runGroup(t, 2, func(r int) Config { return config(dirs[r]) })
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r := range res {
		got := res[r]
		if got.Selection == nil || fmt.Sprint(got.Selection.Epochs) != fmt.Sprint(ref.Selection.Epochs) ||
			got.Selection.ValExamples != ref.Selection.ValExamples {
			t.Fatalf("rank %d: selection %+v, one process %+v", r, got.Selection, ref.Selection)
		}
		if math.Abs(got.Final[0].TestLoss-ref.Final[0].TestLoss) > 1e-5 || got.Final[0].TestTop1 != ref.Final[0].TestTop1 {
			t.Errorf("rank %d: final %+v, one process %+v", r, got.Final[0], ref.Final[0])
		}
		for e := range ref.Epochs {
			a, b := ref.Epochs[e], got.Epochs[e]
			if math.Abs(a.Val[0].Loss-b.Val[0].Loss) > 1e-5 || math.Abs(a.EMA[0].Val.Loss-b.EMA[0].Val.Loss) > 1e-5 ||
				math.Abs(a.EMA[0].Test.Loss-b.EMA[0].Test.Loss) > 1e-5 {
				t.Errorf("rank %d epoch %d: validation %+v, moving average %+v %+v; one process %+v, %+v %+v", r, e+1,
					b.Val[0], *b.EMA[0].Val, *b.EMA[0].Test, a.Val[0], *a.EMA[0].Val, *a.EMA[0].Test)
			}
		}
	}
}
