package trainer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

// TestOptimizerRegistry: the rows are numbered as optim.hpp's rules (the
// shim accepts every row's number, name and parameter count, and makes
// the state its comment promises), their defaults pass their own checks,
// and each enters a run's identity in its form (Adam's and RMSProp's as
// before the registry: their checkpoints still resume).
func TestOptimizerRegistry(t *testing.T) {
	wantState := map[string][]string{ // per parameter, without momentum
		"sgd": nil, "rmsprop": {"square_avg"}, "adam": {"exp_avg", "exp_avg_sq", "step"},
		"adamw": {"exp_avg", "exp_avg_sq", "step"}, "radam": {"exp_avg", "exp_avg_sq", "step"},
		"nadam": {"exp_avg", "exp_avg_sq", "step", "mu_product"},
	}
	wantID := map[string]string{
		"sgd": "", "rmsprop": " rmsprop decay=0.9 eps=1", "adam": " adam betas=0.9,0.999 eps=1e-08",
		"adamw": " adamw betas=0.9,0.999 eps=1e-08", "radam": " radam beta1=0.9 beta2=0.999 eps=1e-08",
		"nadam": " nadam beta1=0.9 beta2=0.999 eps=1e-08 momentum_decay=0.004",
	}
	m, err := torch.NewModel(mlp32(t), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	nParams := 4 // mlp:hidden=32: two linear layers
	for i, k := range Optimizers() {
		if k.Rule != int32(i) {
			t.Errorf("%s: rule %d in row %d", k.Name, k.Rule, i)
		}
		o := Optim{Optimizer: k.Name, Schedule: Schedule{Kind: "constant", LR: 0.1}}
		if err := o.Validate(); err != nil {
			t.Errorf("%s with its defaults: %v", k.Name, err)
		}
		if got := k.identityOf(o); got != wantID[k.Name] {
			t.Errorf("%s: identity %q, want %q", k.Name, got, wantID[k.Name])
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
		want, ok := wantState[k.Name]
		if !ok || len(info) != nParams*len(want) {
			t.Errorf("%s: %d state tensors, want %d per parameter %v", k.Name, len(info), len(want), want)
			continue
		}
		for j, s := range want {
			if n := info[j*nParams].Name; n != "fc1.weight."+s {
				t.Errorf("%s: state tensor %d is %s, want fc1.weight.%s", k.Name, j*nParams, n, s)
			}
		}
	}
	if _, err := OptimizerByName("lamb"); err == nil || err.Error() != `optimizer "lamb": want sgd, rmsprop, adam, adamw, radam or nadam` {
		t.Errorf("unknown optimizer: %v", err)
	}
}

// TestOptimizerValidate: each parameter's range, and parameters the
// optimizer lacks, are refused with the optimizer and parameter named.
func TestOptimizerValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Optim
		want string
	}{
		{Optim{Optimizer: "nadam", Params: map[string]float64{"momentum_decay": -1}}, "nadam momentum_decay -1: want ≥ 0"},
		{Optim{Optimizer: "radam", Params: map[string]float64{"beta2": 1}}, "radam beta2 1: want 0 ≤ value < 1"},
		{Optim{Optimizer: "rmsprop", Params: map[string]float64{"eps": 0}}, "rmsprop eps 0: want > 0"},
		{Optim{Optimizer: "sgd", Params: map[string]float64{"beta1": 0.9}}, "optimizer sgd has no parameter beta1 (its parameters: momentum, weight_decay, nesterov)"},
		{Optim{Optimizer: "adam", Params: map[string]float64{"momentum": 0.9}}, "optimizer parameter momentum: set it with --momentum"},
		{Optim{Optimizer: "radam", Momentum: 0.9}, "radam has no momentum"},
		{Optim{Optimizer: "rmsprop", Momentum: 0.9, Nesterov: true}, "rmsprop has no Nesterov momentum"},
		{Optim{Nesterov: true}, "nesterov needs a momentum > 0"},
		{Optim{WeightDecay: -1}, "sgd weight_decay -1: want ≥ 0"},
		{Optim{Optimizer: "lamb"}, `optimizer "lamb": want sgd,`},
	} {
		tc.o.Schedule = Schedule{Kind: "constant", LR: 0.1}
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
