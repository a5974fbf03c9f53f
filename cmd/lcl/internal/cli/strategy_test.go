package cli

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
)

// The bridge maps plugin example k to dataset index train[k], pulls
// features lazily for cn's curriculum, and maps weights and subsets back.
func TestBridgeCN(t *testing.T) {
	ctx := context.Background()
	f := &Factory{IO: &IOStreams{}}
	host := newHost(f, 0)
	defer host.Close()
	o := &strategyOptions{Strategy: "cn"}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.addFlags(fs, "cn")
	classes := []sdk.Class{{Index: 0, ID: "a"}, {Index: 1, ID: "b"}}
	// 40 dataset examples; the run trains on the even ones. Feature of
	// example i: class centre (0 or 100) plus an offset — 0 for most, far
	// for every 10th (outliers).
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
	for attempt := 0; attempt < 2; attempt++ { // the second is a resume: a fresh plugin
		opened, err := openStrategy(ctx, f, host, o, fs, nil, classes)
		if err != nil {
			t.Fatal(err)
		}
		b, err := newBridge(ctx, opened, classes, labels, train, 3, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		calls = 0
		p, err := b.plan(ctx, 1, 0, 0, features)
		if err != nil {
			t.Fatal(err)
		}
		if calls != 1 {
			t.Fatalf("features pulled %d times, want once", calls)
		}
		if len(p.Weights) != n {
			t.Fatalf("%d weights, want one per dataset example (%d)", len(p.Weights), n)
		}
		in := map[int]bool{}
		for _, i := range p.Subset {
			if i%2 != 0 {
				t.Fatalf("subset has dataset example %d, outside the training set", i)
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
		if _, err := b.plan(ctx, 1, 2, 0, features); err != nil || calls != 1 {
			t.Fatalf("later epoch: %v, features pulled %d times", err, calls)
		}
		opened.Close()
	}
}

// openPlanner turns the lcl strategy into a trainer.Planner over the
// training subset, with float32 targets equal to the reference math.
func TestOpenPlannerLCL(t *testing.T) {
	ctx := context.Background()
	train, _, err := data.Open("synthetic?n=40&test=8&classes=3&shape=1,4,4")
	if err != nil {
		t.Fatal(err)
	}
	f := &Factory{IO: &IOStreams{Err: io.Discard}, Quiet: true}
	o := &strategyOptions{Strategy: "lcl"}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.addParamFlags(fs)
	if err := fs.Parse([]string{"--epsilon", "0.5", "--matrix", writeWorkedExample(t)}); err != nil {
		t.Fatal(err)
	}
	pl, id, closeFn, err := openPlanner(ctx, f, o, fs, nil, train, []int{0, 1, 2, 5, 7}, 3, 2, "mlp")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if st := pl.Stages(); len(st) != 1 || st[0].Epochs != 3 || st[0].Peers != 1 || st[0].Teacher != "" {
		t.Fatalf("stages %+v", st)
	}
	if id["param epsilon"] != "0.5" || id["param per-step"] != "false" || !strings.HasPrefix(id["similarity"], "3×3:") {
		t.Fatalf("identity %v", id)
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
	if p.Coefs.Soft != 1 || p.Weights != nil || p.Subset != nil {
		t.Fatalf("plan %+v", p)
	}
}
