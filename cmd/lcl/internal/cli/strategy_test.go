package cli

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
)

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
	pl, closeFn, err := openPlanner(ctx, f, o, fs, nil, train, []int{0, 1, 2, 5, 7}, 3, 2, "mlp")
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
	if p.Coefs.Soft != 1 || p.Weights != nil || p.Subset != nil {
		t.Fatalf("plan %+v", p)
	}
}
