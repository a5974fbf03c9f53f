package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/safetensors"
)

// withState rewrites the lcl.checkpoint metadata of a checkpoint file.
func withState(t *testing.T, file []byte, edit func(st map[string]any)) []byte {
	t.Helper()
	ts, meta, err := safetensors.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(meta["lcl.checkpoint"]), &st); err != nil {
		t.Fatal(err)
	}
	edit(st)
	raw, _ := json.Marshal(st)
	meta["lcl.checkpoint"] = string(raw)
	var b bytes.Buffer
	if err := safetensors.Write(&b, ts, meta); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Every field of a checkpoint's position is checked against the run it
// resumes (issue 23, item 18: a position.Step of 10^9 "finished" the
// epoch early with another loss and exit 0).
func TestResumePositionChecked(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig(t, dir)
	cfg.Progress = func(p Progress) {
		if p.Epoch == 2 && p.Step >= 1 {
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
	pos := func(f func(p map[string]any)) func(st map[string]any) {
		return func(st map[string]any) { f(st["position"].(map[string]any)) }
	}
	acc0 := func(p map[string]any) map[string]any { return p["Acc"].([]any)[0].(map[string]any) }
	for _, c := range []struct {
		name string
		edit func(st map[string]any)
		want string
	}{
		{"step 10^9", pos(func(p map[string]any) { p["Step"] = 1e9 }), "position step 1000000000 outside the epoch's 0..8 steps"},
		{"negative step", pos(func(p map[string]any) { p["Step"] = -1 }), "position step -1 outside"},
		{"images", pos(func(p map[string]any) { p["Images"] = 1e12 }), "position counts 1000000000000 images after"},
		{"seconds", pos(func(p map[string]any) { p["Seconds"] = -5 }), "position time -5 s"},
		{"correct above seen", pos(func(p map[string]any) { acc0(p)["correct"] = acc0(p)["seen"].(float64) + 1 }), "position sums of peer 0"},
		{"negative loss", pos(func(p map[string]any) { acc0(p)["loss"] = -1 }), "position sums of peer 0 (loss -1"},
		{"peers", pos(func(p map[string]any) { p["Acc"] = append(p["Acc"].([]any), p["Acc"].([]any)[0]) }), "position holds 2 peers' sums, stage"},
		{"history", func(st map[string]any) { st["history"] = []any{} }, "history of 0 epochs, but the position (stage 0 epoch 1) follows 1"},
		{"finished", func(st map[string]any) { st["finished"] = []any{"train"} }, `finished stage "train" is not a stage before`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, withState(t, good, c.edit), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(t, dir)
			cfg.Resume = true
			_, err := Run(context.Background(), cfg)
			if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want ErrCheckpoint with %q", err, c.want)
			}
		})
	}
	// The untouched checkpoint resumes.
	os.WriteFile(path, good, 0o644)
	cfg = testConfig(t, dir)
	cfg.Resume = true
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Errorf("resuming the good checkpoint: %v", err)
	}
}
