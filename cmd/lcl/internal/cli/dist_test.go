package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/trainer/safetensors"
)

func TestDistFromEnv(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want *distEnv
		err  string
	}{
		{env: map[string]string{}, want: nil},
		{env: map[string]string{"WORLD_SIZE": "1"}, want: nil},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "1", "MASTER_PORT": "29500"},
			want: &distEnv{Rank: 1, World: 2, Addr: "127.0.0.1", Port: 29500}},
		{env: map[string]string{"WORLD_SIZE": "8", "RANK": "5", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "node0", "MASTER_PORT": "1234"},
			want: &distEnv{Rank: 5, World: 8, LocalRank: 1, LocalWorld: 4, Addr: "node0", Port: 1234}},
		{env: map[string]string{"WORLD_SIZE": "2", "MASTER_PORT": "29500"}, err: "RANK is not"},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "2", "MASTER_PORT": "29500"}, err: "0 ≤ RANK < WORLD_SIZE"},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "0"}, err: "MASTER_PORT is not"},
		{env: map[string]string{"WORLD_SIZE": "two", "RANK": "0", "MASTER_PORT": "1"}, err: `WORLD_SIZE="two"`},
	} {
		for _, k := range []string{"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"} {
			t.Setenv(k, tt.env[k])
		}
		got, err := distFromEnv()
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.env, err, tt.err)
			}
			continue
		}
		if err != nil || (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%v: got %+v, %v; want %+v", tt.env, got, err, tt.want)
		}
	}
}

// TestLaunchWorkerDeathNamesRank: when one worker dies, the launcher stops
// the others and its error names the dead rank.
func TestLaunchWorkerDeathNamesRank(t *testing.T) {
	var errb bytes.Buffer
	f := &Factory{IO: &IOStreams{Out: &bytes.Buffer{}, Err: &errb}}
	script := `echo "I am $RANK of $WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT" >&2; if [ "$RANK" = 1 ]; then sleep 0.2; kill -9 $$; fi; exec sleep 60`
	t0 := time.Now()
	err := launch(context.Background(), f, "/bin/sh", []string{"-c", script}, 3, 1)
	if err == nil || !strings.Contains(err.Error(), "worker rank 1 of 3") || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("error %v, want one naming rank 1 killed", err)
	}
	if time.Since(t0) > 8*time.Second {
		t.Errorf("the other workers were not stopped promptly (%v)", time.Since(t0))
	}
	t.Logf("%v\n%s", err, errb.String())
	if !strings.Contains(errb.String(), "rank 2: I am 2 of 3 at 127.0.0.1:") {
		t.Errorf("stderr of rank 2 not passed through with its prefix:\n%s", errb.String())
	}
}

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
// Gloo over loopback) on a part of Fashion-MNIST ends one epoch with the
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
		return append([]string{"train", "--synsets", "fashion-mnist", "--model", model, "--fraction", "0.02", "--epochs", "1",
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
}
