package trainrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
	"github.com/lcl-project/lcl/trainer/torch"
)

// Built-in plugins are served by re-executing lcl as `lcl plugins serve
// KIND NAME`; in these tests that executable is this test binary, which
// then serves instead of testing.
func init() {
	if os.Getenv("LCL_PLUGIN_MAGIC_COOKIE") != "" && len(os.Args) == 5 && os.Args[1] == "plugins" && os.Args[2] == "serve" {
		if err := plugins.ServeBuiltin(os.Args[3], os.Args[4]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// testEnv has the built-in plugins and no store.
func testEnv(t *testing.T) Env {
	return Env{
		Store: func() (similarity.MatrixStore, error) { return nil, errors.New("no store in this test") },
		Host:  func(timeout time.Duration) *plugins.Host { return &plugins.Host{Timeout: timeout} },
	}
}

// writeWorkedExample writes the similarity of plugins/strategy's worked example.
func writeWorkedExample(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sim.npy")
	if err := npy.WriteFile(path, 3, 3, []float64{1, 0.5, 0.5, 0.2, 1, 0.6, 0, 0.25, 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

// OpenPlanner turns the lcl strategy into a trainer.Planner over the
// training subset, with float32 targets equal to the reference math.
func TestOpenPlannerLCL(t *testing.T) {
	ctx := context.Background()
	train, _, err := data.Open("synthetic?n=40&test=8&classes=3&shape=1,4,4")
	if err != nil {
		t.Fatal(err)
	}
	sel := Selection{Strategy: "lcl", Params: map[string]string{"epsilon": "0.5"}, File: writeWorkedExample(t)}
	pl, closeFn, err := OpenPlanner(ctx, testEnv(t), sel, 0, nil, train, []int{0, 1, 2, 5, 7}, 3, 2, "mlp")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if st := pl.Stages(); len(st) != 1 || st[0].Epochs != 3 || st[0].Peers != 1 || st[0].Teacher != "" {
		t.Fatalf("stages %+v", st)
	}
	if id := pl.Identity(); id["param epsilon"] != "0.5" || id["param per-step"] != "false" || !strings.HasPrefix(id["similarity"], "3×3:") {
		t.Fatalf("identity %v", pl.Identity())
	}
	p, err := pl.Plan(ctx, trainer.PlanContext{StageIndex: 0, Epoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Worked example, epoch 2, row 1: [1/48, 11/12, 1/16].
	for j, w := range []float64{1. / 48, 11. / 12, 1. / 16} {
		if math.Abs(float64(p.Targets[3+j])-w) > 1e-7 {
			t.Fatalf("targets row 1 = %v", p.Targets[3:6])
		}
	}
	if p.Coefs.SoftCE != 1 || p.Weights != nil || p.Subset != nil {
		t.Fatalf("plan %+v", p)
	}
}

// What the run asked for is refused as a usage error before any matrix is
// looked for: ε out of range (the store, which would be asked next, fails
// this test if it is opened), an unknown parameter, --source matrix
// without its file.
func TestStrategyUsageErrorsFirst(t *testing.T) {
	ctx := context.Background()
	train, _, err := data.Open("synthetic?n=12&test=4&classes=3&shape=1,4,4")
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	env.Store = func() (similarity.MatrixStore, error) {
		t.Error("the store was opened before the parameters were checked")
		return nil, errors.New("no store")
	}
	for _, tc := range []struct {
		sel  Selection
		want string
	}{
		{Selection{Strategy: "lcl", Params: map[string]string{"epsilon": "1.5"}, Source: "semantic"}, "epsilon = 1.5, want a value in (0,1]"},
		{Selection{Strategy: "lcl", Params: map[string]string{"epsilom": "0.9"}, Source: "semantic"}, "--param epsilom=0.9: strategy lcl takes epsilon, per-step, clip-negative; did you mean epsilon?"},
		{Selection{Strategy: "sl", Params: map[string]string{"epsilon": "0.9"}, EpsilonFlag: true}, "--epsilon 0.9: strategy sl takes no parameters (epsilon is a parameter of --strategy lcl)"},
		{Selection{Strategy: "lcll"}, `--strategy: unknown strategy plugin "lcll"; did you mean lcl?`},
		{Selection{Strategy: "lcl", Source: "matrix"}, "--source matrix reads a matrix file: give it as --matrix FILE.npy"},
		{Selection{Strategy: "lcll"}, "--strategy"},
	} {
		set := labelsOf(t)
		_, _, err := OpenPlanner(ctx, env, tc.sel, 0, set, train, nil, 2, 4, "mlp")
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error with %q", tc.sel, err, tc.want)
		}
	}
}

func labelsOf(t *testing.T) *labels.Set {
	t.Helper()
	return &labels.Set{Name: "three", Classes: []labels.Class{{Index: 0, ID: "a", Name: "a"}, {Index: 1, ID: "b", Name: "b"}, {Index: 2, ID: "c", Name: "c"}}}
}

// --precision auto resolves on the machine: the trainer gets the concrete
// precision torch.AutoPrecision names, the note says it, and the spec (the
// run's identity) keeps "auto". bf16 asked for by name runs as asked, with a
// note on a CPU without bf16 units (where auto picks fp32).
func TestOpenPrecisionAuto(t *testing.T) {
	bf16Note := ""
	if p, _ := torch.AutoPrecision("cpu"); p != torch.BF16 {
		bf16Note = "precision bf16: this CPU has no bf16 units"
	}
	for _, tc := range []struct{ given, want, note string }{
		{"auto", "", "precision auto: "},
		{"bf16", "bf16", bf16Note},
		{"fp32", "fp32", ""},
	} {
		spec := experiment.NewTrainSpec()
		spec.Data = "synthetic?n=8&test=4&classes=2&shape=1,4,4"
		spec.Precision = &tc.given
		spec.Exec.Out = t.TempDir()
		r, err := Open(spec, 1)
		if err != nil {
			t.Fatalf("%s: %v", tc.given, err)
		}
		want := tc.want
		if want == "" {
			p, why := torch.AutoPrecision("cpu")
			want = p.String()
			if !strings.Contains(r.PrecisionNote, want) || !strings.Contains(r.PrecisionNote, why) {
				t.Errorf("auto: note %q does not name %s (%s)", r.PrecisionNote, want, why)
			}
		}
		if got := r.Config.Precision.String(); got != want || !strings.HasPrefix(r.PrecisionNote, tc.note) || (tc.note == "") != (r.PrecisionNote == "") {
			t.Errorf("%s: precision %s, note %q; want %s", tc.given, got, r.PrecisionNote, want)
		}
		if r.Spec.PrecisionName() != tc.given {
			t.Errorf("%s: the spec says %s", tc.given, r.Spec.PrecisionName())
		}
		r.Close()
	}
}

// CheckStrategy refuses what a run of the strategy would refuse before it
// starts, with the same words: an unknown parameter with the nearest
// name, a value that is not finite, a value out of the strategy's range —
// for strategies with a similarity and without one alike.
func TestCheckStrategy(t *testing.T) {
	ctx := context.Background()
	classes := curriculum.Classes(labelsOf(t))
	host := &plugins.Host{}
	defer host.Close()
	for _, tc := range []struct {
		sel  Selection
		want string
	}{
		{Selection{Strategy: "mbm-soft", Params: map[string]string{"beta": "-1"}}, "strategy mbm-soft refuses its parameters (beta=-1): " +
			`strategy plugin "mbm-soft" (built-in): Begin: beta = -1, want a finite value > 0`},
		{Selection{Strategy: "hxe", Params: map[string]string{"alpha": ".nan"}}, `--param alpha=.nan: strategy hxe: parameter "alpha": ".nan" is not a valid float`},
		{Selection{Strategy: "hxe", Params: map[string]string{"alpha": "nan"}}, `--param alpha=nan: strategy hxe: parameter "alpha": "nan" is not a finite number`},
		{Selection{Strategy: "lcl", Params: map[string]string{"epsilon": "Inf"}, EpsilonFlag: true}, `--epsilon Inf: strategy lcl: parameter "epsilon": "Inf" is not a finite number`},
		{Selection{Strategy: "ols", Params: map[string]string{"smoothng": "0.1"}}, "--param smoothng=0.1: strategy ols takes alpha, smoothing; did you mean smoothing?"},
		{Selection{Strategy: "ols", Params: map[string]string{"smoothing": "2"}}, "strategy ols refuses its parameters (smoothing=2): " +
			`strategy plugin "ols" (built-in): Begin: smoothing = 2, want a value in [0,1)`},
		{Selection{Strategy: "kd", Params: map[string]string{"alpha": "0.5", "temperature": "-1"}}, "strategy kd refuses its parameters (alpha=0.5, temperature=-1)"},
	} {
		err := CheckStrategy(ctx, host, tc.sel, classes, 2)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want a one-line usage error %q", tc.sel, err, tc.want)
		}
	}
	for _, sel := range []Selection{{Strategy: "ols", Params: map[string]string{"smoothing": "0.2"}}, {Strategy: "lcl", Params: map[string]string{"epsilon": "0.9"}}, {Strategy: "sl"}} {
		if err := CheckStrategy(ctx, host, sel, classes, 2); err != nil {
			t.Errorf("%+v: %v", sel, err)
		}
	}
}
