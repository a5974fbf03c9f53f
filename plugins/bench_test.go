package plugins

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
)

// benchmarkPlan measures one lcl plan for C classes: in-process (the math
// alone) and over the plugin protocol (math + gRPC + the host's checks). The
// difference is the per-epoch cost a plugin adds to a training run.
func benchmarkPlan(b *testing.B, c int, remote bool) {
	r := rand.New(rand.NewPCG(1, 1))
	sim := sdk.NewMatrix(c, c)
	for i := range sim.Data {
		sim.Data[i] = r.Float32()
	}
	for i := 0; i < c; i++ {
		sim.Set(i, i, 1)
	}
	run := sdk.Run{Epochs: 100, Similarity: sim}
	for i := 0; i < c; i++ {
		run.Classes = append(run.Classes, sdk.Class{Index: i})
	}
	ctx := context.Background()
	var st sdk.Strategy = &strategy.LCL{}
	if remote {
		h := testHost(b)
		s, err := h.Strategy("lcl")
		if err != nil {
			b.Fatal(err)
		}
		st = s
	}
	if _, err := st.Begin(ctx, run); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := st.Plan(ctx, sdk.PlanAt{Epoch: i % 100}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlanLCL100InProcess(b *testing.B)  { benchmarkPlan(b, 100, false) }
func BenchmarkPlanLCL100Plugin(b *testing.B)     { benchmarkPlan(b, 100, true) }
func BenchmarkPlanLCL1000InProcess(b *testing.B) { benchmarkPlan(b, 1000, false) }
func BenchmarkPlanLCL1000Plugin(b *testing.B)    { benchmarkPlan(b, 1000, true) }
