package trainer

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

// TestOptimizerRegistry: the rows are numbered as optim.hpp's rules (the
// shim accepts every row's number, name and parameter count, and makes
// state tensors per parameter; TestOptimizersMatchPyTorch checks their
// names), their defaults pass their own checks, and each enters a run's
// identity: the optimizers older than the registry in the form their
// checkpoints were written with, the others by name and parameters.
func TestOptimizerRegistry(t *testing.T) {
	legacyID := map[string]string{
		"sgd": "", "rmsprop": " rmsprop decay=0.9 eps=1", "adam": " adam betas=0.9,0.999 eps=1e-08",
		"adamw": " adamw betas=0.9,0.999 eps=1e-08",
	}
	m, err := torch.NewModel(mlp32(t), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const nParams = 4 // mlp:hidden=32: two linear layers
	for i, k := range Optimizers() {
		if k.Rule != int32(i) {
			t.Errorf("%s: rule %d in row %d", k.Name, k.Rule, i)
		}
		o := Optim{Epochs: 1, Batch: 1, Optimizer: k.Name, Momentum: 0.9, Schedule: Schedule{Kind: "constant", LR: 0.1}}
		if !k.Has("momentum") {
			o.Momentum = 0
		}
		if err := o.Validate(); err != nil {
			t.Errorf("%s with its defaults: %v", k.Name, err)
		}
		if want, ok := legacyID[k.Name]; ok && k.identityOf(o) != want {
			t.Errorf("%s: identity %q, want %q", k.Name, k.identityOf(o), want)
		}
		opt, err := k.newOptimizer(m, o)
		if err != nil {
			t.Errorf("%s: %v", k.Name, err)
			continue
		}
		info, err := opt.State().Info()
		opt.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(info) == 0 || len(info)%nParams != 0 || !strings.HasPrefix(info[0].Name, "fc1.weight.") {
			t.Errorf("%s: state %v, want tensors for each of the %d parameters", k.Name, info, nParams)
		}
	}
	k := Optimizer{Name: "new", Params: []OptimParam{unitParam("beta1", 0.9, ""), nonNegParam("weight_decay", 0, ""),
		positiveParam("eps", 1e-8, "")}}
	if id := k.identityOf(Optim{WeightDecay: 0.1, Params: map[string]float64{"eps": 0.5}}); id != " new beta1=0.9 eps=0.5" {
		t.Errorf("a new optimizer's identity %q, want its name and parameters but weight_decay (every run's)", id)
	}
	if _, err := OptimizerByName("lamb"); err == nil || err.Error() != `optimizer "lamb": want `+OptimizerNames() ||
		!strings.HasPrefix(OptimizerNames(), "sgd, rmsprop, adam, adamw, ") || !strings.Contains(OptimizerNames(), " or ") {
		t.Errorf("unknown optimizer: %v (the choices: %s)", err, OptimizerNames())
	}
}

// TestOptimizerValidate: each parameter's range, and parameters the
// optimizer lacks, are refused with the optimizer and parameter named.
func TestOptimizerValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Optim
		want string
	}{
		{Optim{Optimizer: "nadam", Params: map[string]float64{"momentum_decay": -1}}, "nadam momentum_decay -1: want a finite value ≥ 0"},
		{Optim{Optimizer: "nadam", Params: map[string]float64{"momentum_decay": math.Inf(1)}}, "nadam momentum_decay +Inf: want a finite value ≥ 0"},
		{Optim{Optimizer: "rmsprop", Params: map[string]float64{"eps": math.Inf(1)}}, "--eps +Inf: want a finite number"},
		{Optim{Optimizer: "radam", Params: map[string]float64{"beta2": 1}}, "radam beta2 1: want 0 ≤ value < 1"},
		{Optim{Optimizer: "rmsprop", Params: map[string]float64{"eps": 0}}, "rmsprop eps 0: want a finite value > 0"},
		{Optim{Optimizer: "sgd", Params: map[string]float64{"beta1": 0.9}}, "--optim-param beta1: optimizer sgd has no parameter beta1 (its parameters: momentum, weight_decay, nesterov)"},
		{Optim{Optimizer: "adam", Params: map[string]float64{"momentum": 0.9}}, "--optim-param momentum: set momentum with --momentum"},
		{Optim{Optimizer: "radam", Momentum: 0.9}, "--momentum 0.9 applies to --optimizer sgd or rmsprop, and this run has --optimizer radam"},
		{Optim{Optimizer: "rmsprop", Momentum: 0.9, Nesterov: true}, "--nesterov true applies to --optimizer sgd, and this run has --optimizer rmsprop"},
		{Optim{Nesterov: true}, "nesterov needs a momentum > 0"},
		{Optim{WeightDecay: -1}, "--weight-decay -1: want a finite value ≥ 0"},
		{Optim{Optimizer: "lamb"}, `--optimizer lamb: want sgd,`},
	} {
		tc.o.Epochs, tc.o.Batch, tc.o.Schedule = 1, 1, Schedule{Kind: "constant", LR: 0.1}
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestEveryOptimizerResumes: a run of each optimizer stopped mid-epoch
// resumes from its checkpoint to the uninterrupted run's figures and
// final weights, bit for bit (the optimizer's state is in the checkpoint).
func TestEveryOptimizerResumes(t *testing.T) {
	for _, k := range Optimizers() {
		t.Run(k.Name, func(t *testing.T) {
			cfg := func(dir string) Config {
				c := testConfig(t, dir)
				c.Optim.Optimizer = k.Name
				if !k.Has("momentum") {
					c.Optim.Momentum, c.Optim.Schedule.LR = 0, 0.01
				}
				c.Optim.Nesterov = k.Has("nesterov")
				return c
			}
			wholeDir, dir := t.TempDir(), t.TempDir()
			whole, err := Run(context.Background(), cfg(wholeDir))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			c := cfg(dir)
			c.Progress = func(p Progress) {
				if p.Epoch == 2 && p.Step == 3 {
					cancel()
				}
			}
			if _, err := Run(ctx, c); !errors.Is(err, ErrCanceled) {
				t.Fatalf("cancelled run: %v", err)
			}
			c = cfg(dir)
			c.Resume = true
			res, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			sameMetrics(t, whole.Epochs, res.Epochs)
			a, errA := os.ReadFile(filepath.Join(wholeDir, "model.safetensors"))
			b, errB := os.ReadFile(filepath.Join(dir, "model.safetensors"))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("final weights differ from the uninterrupted run's (%v, %v)", errA, errB)
			}
		})
	}
}
