package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

// runKeyLines are lcl train command lines whose store keys the lcl of
// issue 46's start (before the settings table) recorded in
// testdata/runkeys.json: a store keeps its runs under these keys, so a
// later lcl must key the same command line the same way (lcl train
// finds the run done, lcl report groups it with its seeds).
var runKeyLines = [][]string{
	{"--synsets", "fashion-mnist"},
	{"--synsets", "cifar100", "--model", "resnet18:stem=cifar", "--strategy", "lcl", "--epsilon", "0.99", "--seed", "3", "--fraction", "0.2"},
	{"--synsets", "cifar100", "--strategy", "ls", "--param", "epsilon=0.1", "--preset", "wrn-cifar", "--epochs", "30"},
	{"--synsets", "cifar100", "--batch", "256", "--lr", "0.2", "--momentum", "0.8", "--nesterov", "--weight-decay", "1e-4"},
	{"--synsets", "cifar100", "--schedule", "multistep", "--milestones", "10,20", "--gamma", "0.2", "--warmup", "2"},
	{"--synsets", "cifar100", "--schedule", "step", "--step-size", "5"},
	{"--synsets", "cifar100", "--optimizer", "adamw", "--betas", "0.8,0.99", "--eps", "1e-6", "--clip-grad-norm", "1", "--ema-decay", "0.999"},
	{"--synsets", "cifar100", "--optimizer", "nadam", "--optim-param", "momentum_decay=0.008"},
	{"--synsets", "cifar100", "--val-fraction", "0.1", "--select", "loss", "--patience", "5", "--test-every-epoch"},
	{"--synsets", "cifar100", "--randaugment", "2,9", "--random-erasing", "0.25", "--mixup", "0.2", "--cutmix", "1", "--mix-prob", "0.5", "--mix-switch-prob", "0.4"},
	{"--synsets", "cifar100", "--trivialaugment", "--precision", "bf16", "--init", "w.safetensors", "--init-skip", "fc"},
	{"--synsets", "cifar100", "--strategy", "lcl", "--matrix", "m.npy", "--device", "cuda", "--nproc", "2", "--out", "x"},
}

type runKey struct {
	Args   []string           `json:"args"`
	Config simstore.RunConfig `json:"config"`
	ID     string             `json:"id"`
}

func runKeysNow(t *testing.T) []runKey {
	var keys []runKey
	for _, line := range runKeyLines {
		s := parseTrain(t, line...)
		similarity := slices.Contains(line, "lcl")
		c, err := s.Config(similarity)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		keys = append(keys, runKey{Args: line, Config: c, ID: c.ID()})
	}
	return keys
}

// TestRunKeysOfOldStores: today's lcl keys the command lines as the lcl
// that wrote testdata/runkeys.json did (LCL_WRITE_FIXTURES=1 writes it
// again: only ever with the lcl whose stores it stands for).
func TestRunKeysOfOldStores(t *testing.T) {
	path := filepath.Join("testdata", "runkeys.json")
	now := runKeysNow(t)
	if os.Getenv("LCL_WRITE_FIXTURES") != "" {
		b, err := json.MarshalIndent(now, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var old []runKey
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	if len(old) != len(now) {
		t.Fatalf("%d recorded keys, %d command lines", len(old), len(now))
	}
	for i := range old {
		if slices.Contains(old[i].Args, "--optim-param") {
			// The lcl before the settings table left --optim-param out
			// of the key (its flag had no Given): two runs that differ
			// only in it shared one key. Now it is part of it.
			if now[i].Config.Args["optim-param"] == "" {
				t.Errorf("%q: key %s lacks --optim-param", now[i].Args, mustJSON(now[i].Config))
			}
			continue
		}
		if old[i].ID != now[i].ID {
			t.Errorf("%q: key %s (%s), the old store's %s (%s)", now[i].Args, now[i].ID, mustJSON(now[i].Config), old[i].ID, mustJSON(old[i].Config))
		}
	}
}
