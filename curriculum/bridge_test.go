package curriculum_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
)

// The test binary doubles as lcl serving its built-in strategies when the
// plugin host starts it (the handshake cookie is set).
func init() {
	if os.Getenv("LCL_PLUGIN_MAGIC_COOKIE") == "" || len(os.Args) < 3 {
		return
	}
	if err := plugins.ServeBuiltin(os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// builtin is a built-in strategy run in this process.
type builtin struct {
	sdk.Strategy
	name string
}

func (b builtin) Label() string { return "strategy " + b.name + " (in process)" }

func newBuiltin(t *testing.T, name string) (builtin, sdk.StrategyInfo) {
	t.Helper()
	st, ok := strategy.New(name)
	if !ok {
		t.Fatalf("no built-in strategy %s", name)
	}
	info, err := st.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return builtin{st, name}, info
}

// workedExample is the 3×3 similarity of plugins/strategy's worked example.
func workedExample() *sdk.Matrix {
	return &sdk.Matrix{Rows: 3, Cols: 3, Data: []float32{1, 0.5, 0.5, 0.2, 1, 0.6, 0, 0.25, 1}}
}

func threeClasses() []sdk.Class {
	return curriculum.NumberedClasses(3, []string{"a", "b", "c"})
}

// The bridge maps strategy example k to data-set index train[k], pulls
// features lazily for cn's curriculum, and maps weights and subsets back.
func TestBridgeCNFeaturesAndIndices(t *testing.T) {
	ctx := context.Background()
	// 40 data-set examples; the run trains on the even ones. Feature of
	// example i: class centre (0 or 100) plus an offset — 0 for most, far
	// for every 20th (outliers).
	n := 40
	labels := make([]int, n)
	var train []int
	for i := range labels {
		labels[i] = (i / 2) % 2
		if i%2 == 0 {
			train = append(train, i)
		}
	}
	feature := func(i int) []float32 {
		x := float32(100 * labels[i])
		switch {
		case i%20 == 0:
			x += 30 + float32(i)
		case i%8 == 0:
			x += 5
		}
		return []float32{x, 0}
	}
	calls := 0
	features := func(_ context.Context, stage string, idx []int) ([][]float32, error) {
		calls++
		if stage != "pretrain" {
			t.Fatalf("features of stage %q", stage)
		}
		out := make([][]float32, len(idx))
		for k, i := range idx {
			if i%2 != 0 {
				t.Fatalf("features asked for example %d, outside the training set", i)
			}
			out[k] = feature(i)
		}
		return out, nil
	}
	for attempt := range 2 { // the second is a resume: a fresh strategy
		st, info := newBuiltin(t, "cn")
		b, err := curriculum.New(ctx, st, curriculum.Run{Info: info, Classes: curriculum.NumberedClasses(2, nil), Labels: labels, Train: train, Epochs: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Trainable(); err != nil {
			t.Fatal(err)
		}
		if s := b.Stages(); len(s) != 2 || s[0].Name != "pretrain" || s[1].Name != "curriculum" {
			t.Fatalf("stages %+v", s)
		}
		calls = 0
		p, err := b.Plan(ctx, curriculum.PlanContext{StageIndex: 1, Epoch: 0, Features: features})
		if err != nil {
			t.Fatal(err)
		}
		if calls != 1 {
			t.Fatalf("attempt %d: features pulled %d times, want once", attempt, calls)
		}
		if len(p.Weights) != n {
			t.Fatalf("%d weights, want one per data-set example (%d)", len(p.Weights), n)
		}
		in := map[int]bool{}
		for _, i := range p.Subset {
			if i%2 != 0 {
				t.Fatalf("subset has data-set example %d, outside the training set", i)
			}
			in[i] = true
		}
		for i, w := range p.Weights {
			if (w != 0) != in[i] {
				t.Fatalf("example %d: weight %g, in subset %v", i, w, in[i])
			}
		}
		// The far outliers (i%20 == 0) are not clean: not in the first phase.
		if in[0] || in[20] || !in[2] {
			t.Fatalf("first-phase subset %v", p.Subset)
		}
		if _, err := b.Plan(ctx, curriculum.PlanContext{StageIndex: 1, Epoch: 2, Features: features}); err != nil || calls != 1 {
			t.Fatalf("later epoch: %v, features pulled %d times", err, calls)
		}
	}
	// Without a way to get features, the curriculum stage cannot be planned.
	st, info := newBuiltin(t, "cn")
	b, err := curriculum.New(ctx, st, curriculum.Run{Info: info, Classes: curriculum.NumberedClasses(2, nil), Labels: labels, Epochs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Plan(ctx, curriculum.PlanContext{StageIndex: 1}); err == nil || !strings.Contains(err.Error(), `needs the features of stage "pretrain"`) {
		t.Errorf("plan without features: %v", err)
	}
}

// LCL's plan reaches the trainer as float32 targets equal to the worked
// example; the identity holds the effective parameters and the matrix digest.
func TestBridgeLCLPlanAndIdentity(t *testing.T) {
	ctx := context.Background()
	st, info := newBuiltin(t, "lcl")
	labels := []int{0, 1, 2, 0, 1, 2, 0, 1}
	b, err := curriculum.New(ctx, st, curriculum.Run{Info: info, Params: map[string]string{"epsilon": "0.5"}, Classes: threeClasses(),
		Similarity: workedExample(), Labels: labels, Train: []int{0, 1, 2, 5, 7}, Epochs: 3, StepsPerEpoch: 2, Model: "mlp"})
	if err != nil {
		t.Fatal(err)
	}
	if s := b.Stages(); len(s) != 1 || s[0].Epochs != 3 || s[0].Peers != 1 || s[0].Teacher != "" {
		t.Fatalf("stages %+v", s)
	}
	id := b.Identity()
	if id["param epsilon"] != "0.5" || id["param per-step"] != "false" || id["strategy_version"] != info.Version ||
		id["similarity"] != curriculum.MatrixDigest(workedExample()) || !strings.HasPrefix(id["similarity"], "3×3:") {
		t.Fatalf("identity %v", id)
	}
	p, err := b.Plan(ctx, curriculum.PlanContext{StageIndex: 0, Epoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Worked example, epoch 2, row 1: [1/48, 11/12, 1/16].
	for j, w := range []float64{1. / 48, 11. / 12, 1. / 16} {
		if math.Abs(float64(p.Targets[3+j])-w) > 1e-7 {
			t.Fatalf("targets row 1 = %v", p.Targets[3:6])
		}
	}
	if p.Coefs != (curriculum.Coefs{SoftCE: 1}) || p.Weights != nil || p.Subset != nil {
		t.Fatalf("plan %+v", p)
	}
	// The strategy's plan has the same targets.
	sp, err := b.StrategyPlan(ctx, sdk.PlanAt{Epoch: 2}, nil)
	if err != nil || sp.Targets.At(1, 1) != p.Targets[4] {
		t.Fatalf("strategy plan %v %v", sp, err)
	}
}

// flaky plans one-hot, and fails Observe from epoch observeFails on.
type flaky struct {
	strategy.SL
	observeFails int
	observed     int
	fresh        bool
}

func (f *flaky) Label() string { return "strategy flaky" }

func (f *flaky) Begin(ctx context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if _, err := f.SL.Begin(ctx, run); err != nil {
		return nil, err
	}
	return []sdk.Stage{{Name: "a", Epochs: 1, Peers: 1, Teacher: -1, Fresh: true}, {Name: "b", Epochs: 1, Peers: 1, Teacher: -1, Fresh: f.fresh}}, nil
}

func (f *flaky) Plan(context.Context, sdk.PlanAt) (*sdk.Plan, error) {
	return &sdk.Plan{Coefs: sdk.Coefs{HardCE: 1}}, nil
}

func (f *flaky) Observe(_ context.Context, m sdk.Metrics) error {
	f.observed++
	if m.Epoch >= f.observeFails {
		return fmt.Errorf("observe epoch %d: plugin crashed", m.Epoch)
	}
	return nil
}

// A failed Observe (which the trainer's epoch callback cannot return) fails
// the next Plan, and the strategy is not asked again.
func TestBridgeHoldsBackObserveError(t *testing.T) {
	ctx := context.Background()
	st := &flaky{observeFails: 1, fresh: true}
	b, err := curriculum.New(ctx, st, curriculum.Run{Classes: threeClasses(), Labels: []int{0, 1, 2}, Epochs: 2})
	if err != nil {
		t.Fatal(err)
	}
	obs := func(epoch int) curriculum.Observation {
		return curriculum.Observation{Epoch: epoch, Peers: []curriculum.PeerMetrics{{TestTop1: 0.5}, {TestTop1: 0.6}}}
	}
	b.Observe(ctx, obs(1)) // strategy epoch 0: fine, both peers
	if st.observed != 2 {
		t.Fatalf("observed %d times, want once per peer", st.observed)
	}
	if p, err := b.Plan(ctx, curriculum.PlanContext{Epoch: 1}); err != nil || p.Coefs.HardCE != 1 {
		t.Fatalf("plan after a good observe: %+v %v", p, err)
	}
	b.Observe(ctx, obs(2)) // fails on the first peer
	b.Observe(ctx, obs(3))
	if st.observed != 3 {
		t.Errorf("observed %d times after the failure, want no more calls", st.observed)
	}
	if _, err := b.Plan(ctx, curriculum.PlanContext{Epoch: 2}); err == nil || !strings.Contains(err.Error(), "plugin crashed") {
		t.Fatalf("plan after a failed observe: %v", err)
	}
}

// A stage that continues the previous stage's model is refused for training
// (planning it stays possible).
func TestBridgeTrainableNeedsFreshStages(t *testing.T) {
	b, err := curriculum.New(context.Background(), &flaky{fresh: false}, curriculum.Run{Classes: threeClasses(), Labels: []int{0, 1, 2}, Epochs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Trainable(); err == nil || !strings.Contains(err.Error(), `stage "b" continues`) {
		t.Fatalf("Trainable = %v", err)
	}
	if _, err := b.StrategyPlan(context.Background(), sdk.PlanAt{Stage: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := curriculum.New(context.Background(), &flaky{}, curriculum.Run{Labels: []int{0}, Train: []int{3}}); err == nil {
		t.Error("a training index outside the data set was accepted")
	}
}

// The same bridge drives a strategy in a plugin process.
func TestBridgeOverPluginProcess(t *testing.T) {
	ctx := context.Background()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := &plugins.Host{Self: []string{exe}}
	defer host.Close()
	st, err := host.Strategy("lcl")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := curriculum.New(ctx, st, curriculum.Run{Info: info, Params: map[string]string{"epsilon": "0.5"}, Classes: threeClasses(),
		Similarity: workedExample(), Labels: []int{0, 1, 2}, Epochs: 3})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Plan(ctx, curriculum.PlanContext{Epoch: 2})
	if err != nil || math.Abs(float64(p.Targets[4])-11./12) > 1e-7 {
		t.Fatalf("plan %v %v", p.Targets, err)
	}
	st.Close()
	var pe *plugins.Error
	if _, err := b.Plan(ctx, curriculum.PlanContext{Epoch: 1}); err == nil || (!errors.As(err, &pe) && !strings.Contains(err.Error(), "lcl")) {
		t.Fatalf("plan from a stopped plugin: %v", err)
	}
}

// recorder keeps what Observe is sent.
type recorder struct {
	flaky
	got []sdk.Metrics
}

func (r *recorder) Observe(_ context.Context, m sdk.Metrics) error {
	r.got = append(r.got, m)
	return nil
}

// Observe sends an epoch's figures by name: the test figures only when the
// test set was evaluated, the validation figures when there is a split.
func TestBridgeObserveNames(t *testing.T) {
	ctx := context.Background()
	st := &recorder{flaky: flaky{fresh: true}}
	b, err := curriculum.New(ctx, st, curriculum.Run{Classes: threeClasses(), Labels: []int{0, 1, 2}, Epochs: 2})
	if err != nil {
		t.Fatal(err)
	}
	b.Observe(ctx, curriculum.Observation{Epoch: 1, LR: 0.1, Peers: []curriculum.PeerMetrics{{TrainLoss: 1, TrainTop1: 0.5, Untested: true,
		Val: &curriculum.ValMetrics{Top1: 0.25, Top5: 0.75, Loss: 2}}}})
	b.Observe(ctx, curriculum.Observation{Epoch: 2, LR: 0.1, Peers: []curriculum.PeerMetrics{{TrainLoss: 1, TrainTop1: 0.5, TestTop1: 0.3, TestTop5: 0.9, TestLoss: 1.5}}})
	want := []map[string]float64{
		{"train_loss": 1, "train_top1": 0.5, "lr": 0.1, "val_top1": 0.25, "val_top5": 0.75, "val_loss": 2},
		{"train_loss": 1, "train_top1": 0.5, "lr": 0.1, "test_top1": 0.3, "test_top5": 0.9, "test_loss": 1.5},
	}
	if len(st.got) != 2 {
		t.Fatalf("observed %d times", len(st.got))
	}
	for i, m := range st.got {
		if m.Epoch != i || !maps.Equal(m.Values, want[i]) {
			t.Errorf("observe %d: epoch %d %v, want %v", i, m.Epoch, m.Values, want[i])
		}
	}
}
