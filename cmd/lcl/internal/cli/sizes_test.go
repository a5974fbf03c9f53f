package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/trainer/safetensors"
)

// Sizes far beyond the machine are refused before anything is allocated
// for them, with one line naming the option (issue 23, item 8: each ended
// in Go's fatal out-of-memory error, or std::bad_alloc).
func TestSizesBeyondTheMachine(t *testing.T) {
	out := func() string { return filepath.Join(t.TempDir(), "run") }
	const big = "synthetic?n=8&test=8&classes=4&shape=3,224,224"
	weights := filepath.Join(t.TempDir(), "model.safetensors")
	f, err := os.Create(weights)
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(f, nil, map[string]string{"lcl.model": "densenet-bc-190-40:depth=60000004", "lcl.data": synth}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"densenet depth", []string{"train", "--data", synth, "--model", "densenet-bc-190-40:depth=60000004", "--no-store", "--out", out()},
			"--model densenet-bc-190-40:depth=60000004: models: densenet-bc-190-40: option depth=\"60000004\": want a positive integer up to 16384"},
		{"cnn fc", []string{"train", "--data", synth, "--model", "cnn:fc=1000000000", "--no-store", "--out", out()},
			"option fc=\"1000000000\": want a positive integer up to 16384"},
		// Batches within --batch's range (≤ 2^20) that no memory holds for
		// this model and input (10^12 is refused by the flag's row: exit 2).
		{"batch", []string{"train", "--data", big, "--model", "resnet50", "--batch", "100000", "--no-store", "--out", out()},
			"--batch 100000: a training batch of 100000 needs about"},
		{"eval batch", []string{"train", "--data", big, "--model", "resnet50", "--batch", "1", "--eval-batch", "1000000", "--no-store", "--out", out()},
			"--eval-batch 1000000: an evaluation batch of 1000000 needs about"},
		{"synthetic n", []string{"train", "--data", "synthetic?n=1000000000000", "--model", "mlp", "--no-store", "--out", out()},
			"data: synthetic: n=1000000000000 test=256: want at most 33554432 examples per split"},
		{"eval metadata", []string{"eval", "--checkpoint", weights},
			weights + `: its lcl.model "densenet-bc-190-40:depth=60000004": models: densenet-bc-190-40: option depth="60000004"`},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		r := cliRun(t, c.args...)
		runtime.ReadMemStats(&after)
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("%s: took %v", c.name, took)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Errorf("%s: allocated %d MiB", c.name, alloc>>20)
		}
		if r.code != ExitFailure || strings.Count(r.err, "\n") != 1 || !strings.Contains(r.err, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", c.name, r.code, r.err, c.want)
		}
	}
}
