package simstore

import (
	"context"
	"encoding/json"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

// Records as schema 1 wrote them (abridged from a real store): a grid run,
// the duplicate its `lcl train` child wrote with the same folder, and a run
// started by hand.
var schema1Runs = map[string]string{
	"rdacfa8d345d24cec":      `{"id":"rdacfa8d345d24cec","config":{"labels":"fashion-mnist","data":"/usr/share/datasets/fashion-mnist","model":"cnn:channels=16x32","fraction":0.02,"strategy":"sl","seed":1,"epochs":1},"status":"done","top1":[0.6986],"top5":[0.9847],"epochs":[{"epoch":1,"top1":[0.6986]}],"dir":"runs/rdacfa8d345d24cec","updated_at":"2026-11-26T05:09:03.912587629Z"}`,
	"train-a2bc00e712028d02": `{"id":"train-a2bc00e712028d02","config":{"data":"fashion-mnist:/usr/share/datasets/fashion-mnist","device":"cpu","fraction":0.02,"model":"cnn:channels=16x32","optim":{"Epochs":1,"Batch":128},"preset":"fmnist-cnn","seed":1,"strategy":"sl"},"status":"done","top1":[0.6986],"top5":[0.9847],"dir":"runs/rdacfa8d345d24cec","updated_at":"2026-11-26T05:09:03.9Z"}`,
	"train-18ed1e06c42c2fc1": `{"id":"train-18ed1e06c42c2fc1","config":{"data":"fashion-mnist","device":"cpu","fraction":0.02,"model":"cnn","optim":{"Epochs":1,"Batch":128},"preset":"fmnist-cnn","seed":1,"strategy":"lcl"},"status":"done","top1":[0.1611],"top5":[0.5755],"dir":"runs/lcl","updated_at":"2026-11-26T05:08:55Z"}`,
}

func TestSchema1To2DropsGridDuplicates(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, withSchema(1))
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(txn *badger.Txn) error {
		for id, raw := range schema1Runs {
			val, err := encode(KindRun, json.RawMessage(raw), nil)
			if err != nil {
				return err
			}
			if err := txn.Set(runKey(id), val); err != nil {
				return err
			}
		}
		return nil
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _, _ := s.storedSchema(); v != 2 {
		t.Fatalf("schema %d after open, want 2", v)
	}
	runs, err := s.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if len(runs) != 2 || runs[0].ID != "rdacfa8d345d24cec" || runs[1].ID != "train-18ed1e06c42c2fc1" {
		t.Fatalf("runs after the upgrade: %v, want the grid run and the hand-started run", ids)
	}
	// Both keep what they held, in the typed configuration.
	grid, hand := runs[0], runs[1]
	if grid.Config.Labels != "fashion-mnist" || grid.Config.Epochs != 1 || grid.Config.ID() != grid.ID || grid.Top1[0] != 0.6986 {
		t.Errorf("grid run %+v", grid)
	}
	if hand.Config.Data != "fashion-mnist" || hand.Config.Strategy != "lcl" || hand.Config.Preset != "fmnist-cnn" || hand.Dir != "runs/lcl" {
		t.Errorf("hand-started run %+v", hand)
	}
}

func TestRunConfigIDAndMethod(t *testing.T) {
	base := RunConfig{Labels: "fashion-mnist", Model: "cnn", Fraction: 0.1, Strategy: "lcl", Source: "semantic",
		Params: map[string]string{"epsilon": "0.99"}, Seed: 1}
	// Every field is part of the identity.
	variants := map[string]func(c *RunConfig){
		"labels":   func(c *RunConfig) { c.Labels = "mnist" },
		"data":     func(c *RunConfig) { c.Data = "synthetic?n=8" },
		"model":    func(c *RunConfig) { c.Model = "mlp" },
		"fraction": func(c *RunConfig) { c.Fraction = 0.2 },
		"strategy": func(c *RunConfig) { c.Strategy = "ls" },
		"source":   func(c *RunConfig) { c.Source = "visual" },
		"params":   func(c *RunConfig) { c.Params = map[string]string{"epsilon": "0.9"} },
		"seed":     func(c *RunConfig) { c.Seed = 2 },
		"epochs":   func(c *RunConfig) { c.Epochs = 3 },
		"preset":   func(c *RunConfig) { c.Preset = "goyal" },
		"args":     func(c *RunConfig) { c.Args = map[string]string{"lr": "0.1"} },
	}
	seen := map[string]string{base.ID(): "base"}
	for name, change := range variants {
		c := base
		change(&c)
		if prev, dup := seen[c.ID()]; dup {
			t.Errorf("%s: same id as %s", name, prev)
		}
		seen[c.ID()] = name
	}
	if got := base.Method(); got != "LCL(ε=0.99, semantic)" {
		t.Errorf("Method = %q", got)
	}
	if got := (RunConfig{Strategy: "sl"}).Method(); got != "SL" {
		t.Errorf("Method = %q", got)
	}
	soft := RunConfig{Strategy: "soft", Params: map[string]string{"anneal": "0.9"}, Args: map[string]string{"matrix": "data/targets.csv"}, Targets: "ab12"}
	if got := soft.Method(); got != "SOFT(anneal=0.9, targets.csv)" {
		t.Errorf("Method = %q", got)
	}
	soft.Params = map[string]string{"matrix": "a.csv"}
	if got := soft.Method(); got != "SOFT(matrix=a.csv)" {
		t.Errorf("Method of a matrix axis = %q", got)
	}
}
