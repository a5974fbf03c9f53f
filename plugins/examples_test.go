package plugins

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/plugins/sdk"
)

// examplePluginDir builds the Go examples with `go build` and copies the
// Python example into a fresh plugin folder.
func examplePluginDir(t *testing.T) string {
	t.Helper()
	testdep.PythonModules(t, "grpc", "google.protobuf")
	dir := t.TempDir()
	for _, ex := range []string{"lcl-strategy-annealls", "lcl-similarity-lexical"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, ex), "../examples/"+ex)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", ex, err, out)
		}
	}
	for _, f := range []string{"lcl-similarity-py/lcl-similarity-bigram.py", "lcl-strategy-py/lcl-strategy-pyannealls.py", "lcl-strategy-py/lcl_pb2.py"} {
		raw, err := os.ReadFile(filepath.Join("../examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), raw, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestExamplePlugins(t *testing.T) {
	dir := examplePluginDir(t)
	t.Setenv("LCL_PLUGIN_PATH", dir)
	h := testHost(t)
	h.Dirs = nil // the real search path: $LCL_PLUGIN_PATH, then ~/.lcl/plugins
	h.Timeout = 0
	ctx := context.Background()

	list, err := h.List(ctx, ListOptions{Describe: true})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]Descriptor{}
	for _, d := range list {
		found[d.Kind+"/"+d.Name] = d
	}
	for _, want := range []struct{ key, path, version string }{
		{"strategy/annealls", "lcl-strategy-annealls", "0.1.0"},
		{"similarity/lexical", "lcl-similarity-lexical", "0.1.0"},
		{"similarity/bigram", "lcl-similarity-bigram.py", "0.1.0"},
		{"strategy/pyannealls", "lcl-strategy-pyannealls.py", "0.1.0"},
	} {
		d, ok := found[want.key]
		if !ok || d.Error != "" || d.Path != filepath.Join(dir, want.path) || d.Version != want.version {
			t.Errorf("%s listed as %+v", want.key, d)
		}
	}

	t.Run("strategy", func(t *testing.T) {
		st, err := h.Strategy("annealls")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		run := testRun(4, 8)
		run.Epochs = 3
		if _, err := st.Begin(ctx, run); err != nil {
			t.Fatal(err)
		}
		// α = 0.2, 0.1, 0 at epochs 0, 1, 2: true-class mass 1 − α + α/4.
		for epoch, want := range []float64{0.85, 0.925, 1} {
			p, err := st.Plan(ctx, sdk.PlanAt{Epoch: epoch})
			if err != nil {
				t.Fatal(err)
			}
			if got := float64(p.Targets.At(2, 2)); math.Abs(got-want) > 1e-7 {
				t.Fatalf("epoch %d: true-class mass %g, want %g", epoch, got, want)
			}
		}
		run.Params = map[string]string{"alpah": "0.1"}
		if _, err := st.Begin(ctx, run); err == nil || !strings.Contains(err.Error(), `unknown parameter "alpah"`) {
			t.Fatalf("misspelt parameter: %v", err)
		}
	})

	// The Python strategy is the Go one written again: the same plans.
	t.Run("python strategy", func(t *testing.T) {
		goSt, err := h.Strategy("annealls")
		if err != nil {
			t.Fatal(err)
		}
		defer goSt.Close()
		pySt, err := h.Strategy("pyannealls")
		if err != nil {
			t.Fatal(err)
		}
		defer pySt.Close()
		run := testRun(5, 10)
		run.Epochs = 4
		run.Params = map[string]string{"alpha": "0.3"}
		for _, st := range []interface {
			Begin(context.Context, sdk.Run) ([]sdk.Stage, error)
		}{goSt, pySt} {
			if stages, err := st.Begin(ctx, run); err != nil || len(stages) != 1 || stages[0].Epochs != 4 || stages[0].Teacher != -1 {
				t.Fatalf("Begin: %+v %v", stages, err)
			}
		}
		for epoch := range 4 {
			gp, err := goSt.Plan(ctx, sdk.PlanAt{Epoch: epoch})
			if err != nil {
				t.Fatal(err)
			}
			pp, err := pySt.Plan(ctx, sdk.PlanAt{Epoch: epoch})
			if err != nil {
				t.Fatal(err)
			}
			if pp.Coefs != gp.Coefs || len(pp.Targets.Data) != 25 {
				t.Fatalf("epoch %d: python plan %+v, go plan %+v", epoch, pp, gp)
			}
			for i, v := range gp.Targets.Data {
				if pp.Targets.Data[i] != v {
					t.Fatalf("epoch %d: python targets %v, go %v", epoch, pp.Targets.Data, gp.Targets.Data)
				}
			}
		}
		// Beyond the inline limit its plans come as shared files (SHA-256,
		// written row by row), read and removed by the host: the same plans.
		h.InlineLimit = 16
		pyShared, err := h.Strategy("pyannealls")
		h.InlineLimit = 0
		if err != nil {
			t.Fatal(err)
		}
		defer pyShared.Close()
		if _, err := pyShared.Begin(ctx, run); err != nil {
			t.Fatal(err)
		}
		for epoch := range 4 {
			gp, err := goSt.Plan(ctx, sdk.PlanAt{Epoch: epoch})
			if err != nil {
				t.Fatal(err)
			}
			sp, err := pyShared.Plan(ctx, sdk.PlanAt{Epoch: epoch})
			if err != nil || !slices.Equal(sp.Targets.Data, gp.Targets.Data) {
				t.Fatalf("epoch %d: shared python plan %v (%v), go %v", epoch, sp, err, gp.Targets.Data)
			}
			if left, _ := filepath.Glob(filepath.Join(pyShared.c.share, "*")); len(left) != 0 {
				t.Fatalf("files left in the matrix folder: %v", left)
			}
		}
		for params, want := range map[string]string{"alpah": `unknown parameter 'alpah'`, "alpha": "alpha = 2, want a value in [0,1]"} {
			run.Params = map[string]string{params: "2"}
			if _, err := pySt.Begin(ctx, run); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("python strategy, %s=2: %v, want %q", params, err, want)
			}
		}
	})

	classes := []sdk.Class{{Index: 0, ID: "a", Name: "cat"}, {Index: 1, ID: "b", Name: "car"}, {Index: 2, ID: "c", Name: "dog"}}
	for _, tt := range []struct {
		name string
		want []float64
	}{
		// 1 − edit/len: cat–car 1 − 1/3, cat–dog 1 − 3/3, car–dog 0.
		{"lexical", []float64{1, 2. / 3, 0, 2. / 3, 1, 0, 0, 0, 1}},
		// bigrams of ^cat$: ^c ca at t$; of ^car$: ^c ca ar r$ → 2/6; dog shares none.
		{"bigram", []float64{1, 1. / 3, 0, 1. / 3, 1, 0, 0, 0, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, err := h.Source(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			m, err := src.Compute(ctx, sdk.SimilarityRequest{LabelSet: "pets", Classes: classes})
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tt.want {
				if m.Data[i] != float32(w) {
					t.Fatalf("s = %v, want %v", m.Data, tt.want)
				}
			}
			// The same matrix as a shared file (the Go SDK's CRC-32C, the
			// Python example's SHA-256), read and removed by the host.
			h.InlineLimit = 16
			shared, err := h.Source(tt.name)
			h.InlineLimit = 0
			if err != nil {
				t.Fatal(err)
			}
			defer shared.Close()
			m2, err := shared.Compute(ctx, sdk.SimilarityRequest{LabelSet: "pets", Classes: classes})
			if err != nil || !slices.Equal(m2.Data, m.Data) {
				t.Fatalf("shared: %v, %v; want %v", m2, err, m.Data)
			}
			if left, _ := filepath.Glob(filepath.Join(shared.c.share, "*")); len(left) != 0 {
				t.Fatalf("files left in the matrix folder: %v", left)
			}
			_, err = src.Compute(ctx, sdk.SimilarityRequest{LabelSet: "pets", Classes: classes, Params: map[string]string{"x": "1"}})
			if err == nil || !strings.HasPrefix(err.Error(), `similarity plugin "`+tt.name+`" (`) || !strings.Contains(err.Error(), "unknown parameter") {
				t.Fatalf("bad parameter: %v", err)
			}
		})
	}
}
