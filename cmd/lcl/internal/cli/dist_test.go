package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/safetensors"
)

func readWeights(t *testing.T, path string) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := safetensors.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, x := range ts {
		out[x.Name] = x.Data
	}
	return out
}

func f32(b []byte, i int) float32 {
	return math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
}

// TestTrainNProcEqualsSingleProcess: `--nproc 2` (two worker processes,
// Gloo over loopback) on synth10 with Fashion-MNIST's label set (its
// WordNet graph for the hierarchical metrics; 200 test images, not
// 10,000, whose evaluation was most of the test's time) ends one epoch with the
// weights and metrics of a single process over the same global batches, for
// the MLP and for the small CNN built without batch norm (cnn:bn=0; with BN
// each replica normalises its own half-batch, and lcl has no SyncBN).
func TestTrainNProcEqualsSingleProcess(t *testing.T) {
	t.Setenv("LCL_TEST_CLI", "1") // the test binary stands in for lcl in the workers
	for _, model := range []string{"mlp", "cnn:bn=0"} {
		t.Run(model, func(t *testing.T) { nprocEqualsSingleProcess(t, model) })
	}
}

func nprocEqualsSingleProcess(t *testing.T, model string) {
	dir := t.TempDir()
	args := func(out string, extra ...string) []string {
		return append([]string{"train", "--synsets", "fashion-mnist", "--data", synth10, "--model", model, "--epochs", "1",
			"--batch", "50", "--seed", "2", "--threads", "1", "--no-store", "--out", out}, extra...)
	}
	one, two := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	if code, _, stderr := runLCL(context.Background(), t, args(one)...); code != 0 {
		t.Fatalf("single process: exit %d\n%s", code, stderr)
	}
	code, _, stderr := runLCL(context.Background(), t, args(two, "--nproc", "2")...)
	if code != 0 {
		t.Fatalf("--nproc 2: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "rank 0 of 2") || !strings.Contains(stderr, "global batch 50, 25 per rank") {
		t.Errorf("stderr does not report the group:\n%s", stderr)
	}
	want, got := readWeights(t, filepath.Join(one, "model.safetensors")), readWeights(t, filepath.Join(two, "model.safetensors"))
	if len(want) != len(got) {
		t.Fatalf("%d tensors, want %d", len(got), len(want))
	}
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			t.Fatalf("%s: %d bytes, want %d", name, len(g), len(w))
		}
		for i := range len(w) / 4 {
			if d := math.Abs(float64(f32(g, i) - f32(w, i))); d > 1e-5 {
				t.Fatalf("%s[%d]: --nproc 2 %v, single process %v", name, i, f32(g, i), f32(w, i))
			}
		}
	}
	var m1, m2 map[string]any
	for _, p := range []struct {
		dir string
		m   *map[string]any
	}{{one, &m1}, {two, &m2}} {
		b, err := os.ReadFile(filepath.Join(p.dir, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(bytes.TrimSpace(b), p.m); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"images", "test_top1", "test_top5", "train_top1"} {
		if m1[k] != m2[k] {
			t.Errorf("%s: --nproc 2 %v, single process %v", k, m2[k], m1[k])
		}
	}
	// The hierarchical metrics (Fashion-MNIST's WordNet graph) pass
	// through the all-reduce: the sums of per-example means may differ in
	// their last bits only.
	h1, h2 := hierOf(t, m1["test_hier"]), hierOf(t, m2["test_hier"])
	byHeight := 0.0
	for k, v := range h1 {
		if strings.HasPrefix(k, "mistakes_by_height[") {
			byHeight += v
		}
	}
	if len(h1) != len(h2) || h1["mistakes"] == 0 || byHeight != h1["mistakes"] {
		t.Errorf("test_hier: --nproc 2 %v, single process %v: want the same figures, mistakes by height among them", h2, h1)
	}
	for k := range h1 {
		if math.Abs(h1[k]-h2[k]) > 1e-12*max(1, math.Abs(h1[k])) {
			t.Errorf("test_hier.%s: --nproc 2 %v, single process %v", k, h2[k], h1[k])
		}
	}
	if model != "mlp" {
		return
	}
	// lcl eval of the same weights reports the same figures, and with
	// --crm conditional risk minimisation's beside them.
	code, out, stderr := runLCL(context.Background(), t, "--json", "eval", "--checkpoint", one, "--synsets", "fashion-mnist", "--threads", "1", "--crm")
	if code != 0 {
		t.Fatalf("eval --crm: exit %d\n%s", code, stderr)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("eval --crm output %q: %v", out, err)
	}
	he := hierOf(t, ev["test_hier"])
	for k, v := range h1 {
		if math.Abs(he[k]-v) > 1e-12*max(1, math.Abs(v)) {
			t.Errorf("eval test_hier.%s %v, the run's %v", k, he[k], v)
		}
	}
	crm := hierOf(t, ev["test_crm"])
	if top1 := crm["top1"]; top1 <= 0 || top1 > 1 || crm["hdist5"] <= 0 {
		t.Errorf("eval test_crm %v", crm)
	}
}

// hierOf reads a JSON object of numbers (test_hier, test_crm).
func hierOf(t *testing.T, v any) map[string]float64 {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("hierarchical metrics %v: want an object", v)
	}
	out := map[string]float64{}
	for k, x := range obj {
		if list, ok := x.([]any); ok && k == "mistakes_by_height" {
			// The counts by height, one key each: they add over the ranks too.
			for i, c := range list {
				f, ok := c.(float64)
				if !ok {
					t.Fatalf("%s[%d] = %v: want a number", k, i, c)
				}
				out[fmt.Sprintf("%s[%d]", k, i)] = f
			}
			continue
		}
		f, ok := x.(float64)
		if !ok {
			t.Fatalf("%s = %v: want a number", k, x)
		}
		out[k] = f
	}
	return out
}

// Mixing works data-parallel: each rank mixes its share of the global
// batch with the same λ and box, and the run records it.
func TestTrainNProcMix(t *testing.T) {
	t.Setenv("LCL_TEST_CLI", "1") // the test binary stands in for lcl in the workers
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runLCL(context.Background(), t, "train", "--synsets", "fashion-mnist", "--data", synth10, "--model", "cnn:bn=0",
		"--epochs", "1", "--batch", "50", "--seed", "2", "--threads", "1", "--no-store", "--nproc", "2",
		"--mixup", "0.8", "--cutmix", "1", "--out", out)
	if code != 0 {
		t.Fatalf("--nproc 2 --mixup --cutmix: exit %d\n%s", code, stderr)
	}
	if res := readResult(t, out); res.Mix != "mixup=0.8 cutmix=1" || len(res.Top1) != 1 || !(res.Top1[0] > 0) {
		t.Errorf("result.json: mix %q, top-1 %v", res.Mix, res.Top1)
	}
}
