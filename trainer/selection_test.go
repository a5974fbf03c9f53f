package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

// The validation split is class-stratified (round(f·n) of each class),
// disjoint from what is left to train on, and a function of the seed.
func TestSplitVal(t *testing.T) {
	ds := blobs(100, 4, 3, 1) // 25 of each class
	all := make([]int, 100)
	for i := range all {
		all[i] = i
	}
	rest, val, err := splitVal(ds, all, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	per := map[int]int{}
	for _, i := range val {
		per[ds.Label(i)]++
	}
	if len(val) != 20 || len(rest) != 80 || per[0] != 5 || per[3] != 5 {
		t.Fatalf("split %d/%d, per class %v; want 5 of each class's 25", len(val), len(rest), per)
	}
	if !slices.IsSorted(val) || !slices.IsSorted(rest) {
		t.Error("the parts do not keep the training set's order")
	}
	seen := map[int]bool{}
	for _, i := range append(append([]int(nil), val...), rest...) {
		if seen[i] {
			t.Fatalf("example %d in both parts", i)
		}
		seen[i] = true
	}
	_, again, _ := splitVal(ds, all, 0.2, 1)
	_, other, _ := splitVal(ds, all, 0.2, 2)
	if !slices.Equal(val, again) || slices.Equal(val, other) {
		t.Errorf("seed 1 twice: %v / %v; seed 2: %v", val, again, other)
	}
	if _, _, err := splitVal(ds, all[:8], 0.01, 1); err == nil || !strings.Contains(err.Error(), "holds out no example") {
		t.Errorf("an empty split: %v", err)
	}
}

// collapse trains one-hot until epoch from, then towards the next class's
// label: the validation accuracy falls and early stopping ends the run.
type collapse struct{ from int }

func (collapse) Stages() []Stage { return []Stage{{Name: "train"}} }
func (c collapse) Plan(_ context.Context, pc PlanContext) (Plan, error) {
	if pc.Epoch < c.from {
		return Plan{Coefs: Coefs{HardCE: 1}}, nil
	}
	C := pc.NumClasses
	T := make([]float32, C*C)
	for i := range C {
		T[i*C+(i+1)%C] = 1
	}
	return Plan{Targets: T, Coefs: Coefs{SoftCE: 1}}, nil
}

// TestModelSelection: with a validation split every epoch reports every
// peer's validation figures (and those of the moving averages), the test set
// is evaluated once, on the weights of the best validation epoch, which
// model-best.safetensors holds; early stopping ends the run patience epochs
// after the best one; the checkpoint written on the way resumes to the same
// end.
func TestModelSelection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		metric string
		ema    float64
	}{{"top1", "top1", 0}, {"loss with moving averages", "loss", 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(t, dir)
			cfg.Optim.Epochs, cfg.Optim.EMADecay = 8, tc.ema
			cfg.Planner, cfg.Strategy = collapse{from: 2}, "collapse"
			cfg.ValFraction, cfg.SelectMetric, cfg.Patience = 0.25, tc.metric, 2
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			sel := res.Selection
			if sel == nil || sel.ValExamples != 60 || sel.Metric != "val_"+tc.metric || sel.EMA != (tc.ema > 0) {
				t.Fatalf("selection %+v", sel)
			}
			// The best epoch is the best value of the validation figures
			// (the first of equals), and early stopping came patience later.
			bestE, bestV := 0, 0.0
			for _, em := range res.Epochs {
				if em.Tested() {
					t.Errorf("epoch %d evaluated the test set", em.Epoch)
				}
				h := em.Val[0]
				if tc.ema > 0 {
					h = *em.EMA[0].Val
				}
				v := map[string]float64{"top1": h.Top1, "loss": h.Loss}[tc.metric]
				if better := v > bestV; bestE == 0 || better == (tc.metric == "top1") && v != bestV {
					bestE, bestV = em.Epoch, v
				}
				if len(em.Best) != 1 || em.Best[0] != bestE {
					t.Errorf("epoch %d names best epoch %v, want %d", em.Epoch, em.Best, bestE)
				}
			}
			if sel.Epochs[0] != bestE || sel.Values[0] != bestV {
				t.Errorf("selected epoch %d (%v), the figures say %d (%v)", sel.Epochs[0], sel.Values[0], bestE, bestV)
			}
			if n := len(res.Epochs); sel.StoppedAt != n || n >= 8 || n-bestE != 2 {
				t.Errorf("stopped after %d of 8 epochs (recorded %d), best %d, patience 2", n, sel.StoppedAt, bestE)
			}
			t.Logf("best epoch %d (val %s %.4f), stopped after %d of 8, test top-1 %.4f on the selected weights",
				bestE, tc.metric, bestV, sel.StoppedAt, res.Top1[0])
			// model-best.safetensors holds those weights: its validation
			// and test figures are the ones reported.
			if res.Weights != filepath.Join(dir, "model-best.safetensors") {
				t.Errorf("result weights %s", res.Weights)
			}
			m, err := torch.NewModel(mlp32(t), "cpu")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if _, err := LoadWeights(res.Weights, m); err != nil {
				t.Fatal(err)
			}
			r, err := newRunner(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r.close()
			val, err := r.evaluate(context.Background(), m, r.val)
			if err != nil {
				t.Fatal(err)
			}
			test, err := EvaluateOn(context.Background(), m, cfg.Test, memLoader, EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v := map[string]float64{"top1": val.TestTop1, "loss": val.TestLoss}[tc.metric]; math.Abs(v-bestV) > 1e-6 ||
				test.TestTop1 != res.Top1[0] || res.Final[0].TestTop1 != test.TestTop1 {
				t.Errorf("model-best: validation %v (best %v), test %v; reported %v", v, bestV, test.TestTop1, res.Top1)
			}
			if tc.ema > 0 {
				if _, err := os.Stat(filepath.Join(dir, "model-ema.safetensors")); err != nil {
					t.Error(err)
				}
			}
			var rj struct {
				Selection *Selection `json:"selection"`
			}
			if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err != nil || json.Unmarshal(b, &rj) != nil ||
				rj.Selection == nil || rj.Selection.Epochs[0] != bestE {
				t.Errorf("result.json's selection: %v %+v", err, rj.Selection)
			}
			for _, l := range readMetrics(t, dir) {
				if strings.Contains(l, "test_top1") || !strings.Contains(l, `"val":[{"top1"`) {
					t.Errorf("metrics line %s: want validation figures, no test figures", l)
				}
			}
			// Stopped mid-run, at the last epoch's end and at the
			// evaluation of the selected weights, a resume reaches the
			// same end.
			for _, at := range []string{"epoch 2 step 3", "last step", "selected"} {
				rdir := t.TempDir()
				ctx, cancel := context.WithCancel(context.Background())
				c := cfg
				c.Out = rdir
				c.Progress = func(p Progress) {
					if at == "epoch 2 step 3" && p.Epoch == 2 && p.Step == 3 || at == "last step" && p.Epoch == len(res.Epochs) && p.Step == p.Steps {
						cancel()
					}
				}
				if at == "selected" {
					c.OnEpoch = func(m EpochMetrics) {
						if m.Epoch == len(res.Epochs) {
							cancel()
						}
					}
				}
				if _, err := Run(ctx, c); !errors.Is(err, ErrCanceled) {
					t.Fatalf("%s: cancelled run: %v", at, err)
				}
				c = cfg
				c.Out, c.Resume = rdir, true
				got, err := Run(context.Background(), c)
				if err != nil {
					t.Fatalf("%s: %v", at, err)
				}
				if !slices.Equal(got.Selection.Epochs, sel.Epochs) || !slices.Equal(got.Top1, res.Top1) ||
					!reflect.DeepEqual(got.Final[0], res.Final[0]) || got.Selection.StoppedAt != sel.StoppedAt {
					t.Errorf("resumed at %s: %+v %v, uninterrupted %+v %v", at, got.Selection, got.Final, sel, res.Final)
				}
			}
		})
	}
}

// TestEMAAndAdamResume: a run with AdamW, clipping and a moving average of
// the weights learns, reports the average's figures every epoch, writes
// model-ema.safetensors, and resumes from a checkpoint taken mid-epoch to
// the uninterrupted run's figures (the optimizer's moments and step counts
// and the average are in the checkpoint).
func TestEMAAndAdamResume(t *testing.T) {
	adam := func(c *Config) {
		c.Optim.Optimizer, c.Optim.Momentum, c.Optim.Nesterov = "adamw", 0, false
		c.Optim.Schedule.LR, c.Optim.ClipNorm, c.Optim.EMADecay = 0.01, 5, 0.9
	}
	cfg := testConfig(t, t.TempDir())
	adam(&cfg)
	whole, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	last := whole.Epochs[len(whole.Epochs)-1]
	if whole.Final[0].TestTop1 < 0.9 || len(last.EMA) != 1 || last.EMA[0].Test == nil || last.EMA[0].Test.Top1 < 0.9 ||
		len(whole.EMA) != 1 || whole.EMA[0] != *last.EMA[0].Test {
		t.Fatalf("final %+v, moving average %+v / %+v", whole.Final, last.EMA, whole.EMA)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "model-ema.safetensors")); err != nil {
		t.Error(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	c := testConfig(t, dir)
	adam(&c)
	c.Progress = func(p Progress) {
		if p.Epoch == 3 && p.Step == 3 {
			cancel()
		}
	}
	if _, err := Run(ctx, c); !errors.Is(err, ErrCanceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	c = testConfig(t, dir)
	adam(&c)
	c.Resume = true
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	sameMetrics(t, whole.Epochs, res.Epochs)
	for i := range res.Epochs {
		if *res.Epochs[i].EMA[0].Test != *whole.Epochs[i].EMA[0].Test {
			t.Errorf("epoch %d: moving average %+v, uninterrupted %+v", i+1, *res.Epochs[i].EMA[0].Test, *whole.Epochs[i].EMA[0].Test)
		}
	}
	// Another optimizer is another run.
	c = testConfig(t, dir)
	c.Resume = true
	if _, err := Run(context.Background(), c); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "adamw") {
		t.Errorf("resumed with SGD: %v", err)
	}
}

// TestResumeLongerRun: --resume with a larger --epochs continues a
// finished run. With a constant learning rate it ends where a run of the
// new length does; with cosine, the epochs after the old end follow the
// schedule of the new length and the ones before keep theirs. The same or
// a smaller length is refused with the reason.
func TestResumeLongerRun(t *testing.T) {
	for _, kind := range []string{"constant", "cosine"} {
		t.Run(kind, func(t *testing.T) {
			config := func(dir string, epochs int) Config {
				c := testConfig(t, dir)
				c.Optim.Epochs, c.Optim.Schedule = epochs, Schedule{Kind: kind, LR: 0.05}
				return c
			}
			dir := t.TempDir()
			short, err := Run(context.Background(), config(dir, 2))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{2, 1} {
				c := config(dir, n)
				c.Resume = true
				if _, err := Run(context.Background(), c); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "already finished (2 epochs; a larger --epochs continues it)") {
					t.Errorf("resumed with --epochs %d: %v", n, err)
				}
			}
			c := config(dir, 4)
			c.Resume = true
			res, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Epochs) != 4 || len(readMetrics(t, dir)) != 4 {
				t.Fatalf("continued run has %d epochs, %d metrics lines", len(res.Epochs), len(readMetrics(t, dir)))
			}
			for e, em := range res.Epochs {
				want := short.Epochs[min(e, 1)].LR
				if e >= 2 {
					want = c.Optim.Schedule.At(e, 1-1.0/8, 4)
				}
				if em.LR != want || em.Epochs != 4 && e >= 2 {
					t.Errorf("epoch %d: lr %v (of %d epochs), want %v", e+1, em.LR, em.Epochs, want)
				}
			}
			if kind == "constant" {
				long, err := Run(context.Background(), config(t.TempDir(), 4))
				if err != nil {
					t.Fatal(err)
				}
				sameMetrics(t, long.Epochs[2:], res.Epochs[2:])
			}
		})
	}
}

// Early stopping whose patience runs out at the last epoch ended nothing
// early: the result does not claim it, and --resume with more epochs
// continues the run (and may then stop it early, before its new end).
func TestPatienceAtTheLastEpoch(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	// A constant rate: a shorter run trains the same first epochs.
	cfg.Optim.Epochs, cfg.Optim.Schedule = 8, Schedule{Kind: "constant", LR: 0.05}
	cfg.Planner, cfg.Strategy = collapse{from: 2}, "collapse"
	cfg.ValFraction, cfg.Patience = 0.25, 2
	long, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := long.Selection.StoppedAt
	if n == 0 || n >= 7 || len(long.Epochs) != n {
		t.Fatalf("8 epochs stopped early after %d (%d trained): want a stop before epoch 7", n, len(long.Epochs))
	}
	c := cfg
	c.Out, c.Optim.Epochs = t.TempDir(), n
	short, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(short.Epochs) != n || short.Selection.StoppedAt != 0 || short.Selection.Epochs[0] != long.Selection.Epochs[0] {
		t.Fatalf("%d epochs: trained %d, stopped at %d, selected %v; want %d, none, %v", n, len(short.Epochs),
			short.Selection.StoppedAt, short.Selection.Epochs, n, long.Selection.Epochs)
	}
	c.Optim.Epochs, c.Resume = n+2, true
	more, err := Run(context.Background(), c)
	if err != nil {
		t.Fatalf("resume to %d epochs: %v", n+2, err)
	}
	if len(more.Epochs) != n+1 || more.Selection.StoppedAt != n+1 {
		t.Errorf("resumed to %d epochs: trained %d, stopped at %d; want a stop after epoch %d", n+2, len(more.Epochs), more.Selection.StoppedAt, n+1)
	}
}

// What the engine or --init refuses leaves the run directory unwritten.
func TestRefusalWritesNothing(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := os.WriteFile(bad, []byte("not weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"fp16 on the CPU", func(c *Config) { c.Precision = torch.FP16 }, "fp16 needs a CUDA device"},
		{"--init-skip a module the model lacks", func(c *Config) {
			src := testConfig(t, t.TempDir())
			src.Optim.Epochs = 1
			res, err := Run(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			c.Init, c.InitSkip = res.Weights, []string{"nothere"}
		}, `--init-skip nothere: the model has no tensor under "nothere"`},
		{"--init of no weights", func(c *Config) { c.Init = bad }, "--init"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			c := testConfig(t, dir)
			tc.set(&c)
			if _, err := Run(context.Background(), c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused run left %s (%v)", dir, err)
			}
		})
	}
}

// A strategy is told an epoch of model selection as it is: its validation
// figures, and no test figures (not zeros) when the test set was not
// evaluated.
func TestObservationOfASelection(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Optim.Epochs, cfg.ValFraction, cfg.TestEveryEpoch = 2, 0.25, false
	var seen []EpochMetrics
	cfg.OnEpoch = func(m EpochMetrics) { seen = append(seen, m) }
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, m := range seen {
		o := m.Observation()
		if len(o.Peers) != 1 || o.Epoch != m.Epoch {
			t.Fatalf("observation %+v of epoch %+v", o, m)
		}
		p := o.Peers[0]
		if !p.Untested || p.Val == nil || p.Val.Top1 != m.Val[0].Top1 || p.Val.Top5 != m.Val[0].Top5 || p.Val.Loss != m.Val[0].Loss ||
			p.TrainLoss != m.TrainLoss || p.Val.Top1 == 0 {
			t.Errorf("epoch %d: observation %+v, validation %+v", m.Epoch, p, m.Val)
		}
	}
	// Without a split: tested, no validation figures.
	plain := testConfig(t, t.TempDir())
	plain.Optim.Epochs = 1
	plain.OnEpoch = func(m EpochMetrics) {
		if p := m.Observation().Peers[0]; p.Untested || p.Val != nil || p.TestTop1 != m.TestTop1 {
			t.Errorf("observation %+v of a plain epoch %+v", p, m)
		}
	}
	if _, err := Run(context.Background(), plain); err != nil {
		t.Fatal(err)
	}
}

// --test-every 2 over 5 epochs evaluates the test set after epochs 2, 4
// and the last; the final figures are the last epoch's, as an every-epoch
// run's, and the epochs between are untested (no test figures, not zeros).
func TestTestEvery(t *testing.T) {
	run := func(every int) ([]EpochMetrics, *Result) {
		cfg := testConfig(t, t.TempDir())
		cfg.Optim.Epochs, cfg.TestEvery = 5, every
		var seen []EpochMetrics
		cfg.OnEpoch = func(m EpochMetrics) { seen = append(seen, m) }
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return seen, res
	}
	all, whole := run(1)
	some, sparse := run(2)
	if len(all) != 5 || len(some) != 5 {
		t.Fatalf("epochs: %d and %d", len(all), len(some))
	}
	for i, m := range some {
		want := i == 1 || i == 3 || i == 4
		if m.Tested() != want || !all[i].Tested() {
			t.Errorf("epoch %d: tested %v with --test-every 2 (want %v), %v with 1", i+1, m.Tested(), want, all[i].Tested())
		}
		if want && !reflect.DeepEqual(m.PeerMetrics, all[i].PeerMetrics) {
			t.Errorf("epoch %d: %+v with --test-every 2, %+v with 1", i+1, m.PeerMetrics, all[i].PeerMetrics)
		}
		if !want && (m.Observation().Peers[0].Untested != true || m.TestTop1 != 0) {
			t.Errorf("epoch %d: untested epoch carries %+v", i+1, m.PeerMetrics)
		}
	}
	if !reflect.DeepEqual(whole.Final, sparse.Final) {
		t.Errorf("final: %+v with --test-every 2, %+v with 1", sparse.Final, whole.Final)
	}
}
