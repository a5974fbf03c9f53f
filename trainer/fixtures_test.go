package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkpointFixtures are runs of one epoch whose checkpoints lie in
// testdata/checkpoints/NAME, written by the lcl of issue 46's start
// (before the settings table): a later lcl must resume every one of them
// (a checkpoint is a run's state; users have months of them). Each varies
// the settings that enter the checkpoint's identity: the optimizers, the
// schedules, clipping, the moving average, model selection, mixing.
var checkpointFixtures = []struct {
	name string
	set  func(c *Config)
}{
	{"sgd-cosine", func(c *Config) {}},
	{"sgd-multistep-clip", func(c *Config) {
		c.Optim.Schedule = Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{1, 2}}
		c.Optim.ClipNorm = 1
	}},
	{"sgd-step-ema", func(c *Config) {
		c.Optim.Nesterov = false
		c.Optim.Schedule = Schedule{Kind: "step", LR: 0.1, Gamma: 0.5, StepSize: 1}
		c.Optim.EMADecay = 0.9
	}},
	{"adam", func(c *Config) {
		c.Optim.Optimizer, c.Optim.Momentum, c.Optim.Nesterov = "adam", 0, false
		c.Optim.Params = map[string]float64{"beta1": 0.8}
		c.Optim.Schedule = Schedule{Kind: "constant", LR: 0.01}
	}},
	{"adamw-ema", func(c *Config) {
		c.Optim.Optimizer, c.Optim.Momentum, c.Optim.Nesterov = "adamw", 0, false
		c.Optim.Schedule.LR, c.Optim.ClipNorm, c.Optim.EMADecay = 0.01, 5, 0.9
	}},
	{"rmsprop", func(c *Config) {
		c.Optim.Optimizer, c.Optim.Nesterov = "rmsprop", false
		c.Optim.Params = map[string]float64{"decay": 0.9, "eps": 1}
		c.Optim.Schedule = Schedule{Kind: "step", LR: 0.01, Gamma: 0.94, StepSize: 2}
	}},
	{"radam", func(c *Config) {
		c.Optim.Optimizer, c.Optim.Momentum, c.Optim.Nesterov = "radam", 0, false
		c.Optim.Schedule.LR = 0.01
	}},
	{"nadam", func(c *Config) {
		c.Optim.Optimizer, c.Optim.Momentum, c.Optim.Nesterov = "nadam", 0, false
		c.Optim.Params = map[string]float64{"momentum_decay": 0.008}
		c.Optim.Schedule.LR = 0.01
	}},
	{"val-top5-mix", func(c *Config) {
		c.ValFraction, c.SelectMetric, c.Patience = 0.25, "top5", 3
		c.Mix = Mixing{Mixup: 0.2}
		c.Identity = map[string]string{"dataset": "blobs", "fraction": "1"}
	}},
}

// fixtureConfig is the run of fixture name: testConfig's, smaller, one
// epoch (a resumed run asks for two).
func fixtureConfig(t *testing.T, out string, set func(*Config)) Config {
	c := testConfig(t, out)
	c.Train, c.Test = blobs(96, 4, 6, 1), blobs(32, 4, 6, 2)
	c.Model, c.Optim.Epochs = "mlp:hidden=8", 1
	set(&c)
	return c
}

// TestWriteCheckpointFixtures writes testdata/checkpoints again with
// LCL_WRITE_FIXTURES=1; only ever with the lcl whose checkpoints they
// stand for (they are the old format a later lcl must read).
func TestWriteCheckpointFixtures(t *testing.T) {
	if os.Getenv("LCL_WRITE_FIXTURES") == "" {
		t.Skip("LCL_WRITE_FIXTURES=1 writes testdata/checkpoints")
	}
	for _, f := range checkpointFixtures {
		dir := filepath.Join("testdata", "checkpoints", f.name)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		c := fixtureConfig(t, dir, f.set)
		if _, err := Run(context.Background(), c); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		// Only the checkpoint and the metrics it continues are kept.
		for _, name := range []string{"model.safetensors", "model-ema.safetensors", "model-best.safetensors", "result.json"} {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
}

// Checkpoints written before the settings table resume: the run identity
// derived from the table is the one they recorded, and the run continues
// to its second epoch.
func TestOldCheckpointsResume(t *testing.T) {
	for _, f := range checkpointFixtures {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, filepath.Join("testdata", "checkpoints", f.name), dir)
			c := fixtureConfig(t, dir, f.set)
			c.Optim.Epochs, c.Resume = 2, true
			res, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Epochs) != 2 {
				t.Errorf("%d epochs after resuming, want 2", len(res.Epochs))
			}
		})
	}
}

// An old checkpoint resumed with another setting is refused naming the
// flag and both values.
func TestOldCheckpointNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		set     func(c *Config)
		want    string
	}{
		{"sgd-cosine", func(c *Config) { c.Optim.Schedule.LR = 0.1 }, "--lr 0.05, this run has --lr 0.1"},
		{"sgd-multistep-clip", func(c *Config) { c.Optim.ClipNorm = 2 }, "--clip-grad-norm 1, this run has --clip-grad-norm 2"},
		{"sgd-step-ema", func(c *Config) { c.Optim.EMADecay = 0.99 }, "--ema-decay 0.9, this run has --ema-decay 0.99"},
		{"sgd-cosine", func(c *Config) { c.Optim.Batch = 16 }, "--batch 32, this run has --batch 16"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, filepath.Join("testdata", "checkpoints", tc.fixture), dir)
			var set func(*Config)
			for _, f := range checkpointFixtures {
				if f.name == tc.fixture {
					set = f.set
				}
			}
			c := fixtureConfig(t, dir, set)
			tc.set(&c)
			c.Optim.Epochs, c.Resume = 2, true
			_, err := Run(context.Background(), c)
			if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("resumed: %v, want %q", err, tc.want)
			}
		})
	}
}

// The identities the fixtures recorded, read back as lcl inspect does.
func TestOldCheckpointsReport(t *testing.T) {
	for _, f := range checkpointFixtures {
		meta, err := WeightsMeta(filepath.Join("testdata", "checkpoints", f.name, checkpointName))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(meta["lcl.optim"], "epochs=1 ") || meta["lcl.model"] != "mlp:hidden=8" {
			t.Errorf("%s: identity %s", f.name, mustJSON(meta))
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
