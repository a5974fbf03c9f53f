// Command scale21k times LCL's per-epoch plan for ImageNet-21k's 21,843
// classes over the plugin protocol: the built-in lcl strategy served by an
// lcl binary (the similarity travels to Begin, each epoch's 1.9 GB of
// targets back, as shared files). bench/scale21k.sh runs it after the
// command-line steps.
//
//	go run ./bench/scale21k -lcl bin/lcl [-classes 21843] [-epochs 3]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/sdk"
)

func main() {
	lcl := flag.String("lcl", "bin/lcl", "the lcl binary that serves the built-in strategy")
	classes := flag.Int("classes", 21843, "classes")
	epochs := flag.Int("epochs", 3, "plans to time")
	limit := flag.Float64("limit", 5, "seconds one plan may take (the acceptance bound)")
	flag.Parse()
	if err := run(*lcl, *classes, *epochs, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "scale21k:", err)
		os.Exit(1)
	}
}

func run(lcl string, c, epochs int, limit float64) error {
	exe, err := filepath.Abs(lcl)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(1, 2))
	sim := sdk.NewMatrix(c, c)
	for i := range sim.Data {
		sim.Data[i] = r.Float32()
	}
	for i := 0; i < c; i++ {
		sim.Set(i, i, 1)
	}
	run := sdk.Run{Epochs: epochs, Similarity: sim, Params: map[string]string{"epsilon": "0.99"}, NumExamples: c}
	for i := 0; i < c; i++ {
		run.Classes = append(run.Classes, sdk.Class{Index: i, ID: fmt.Sprint(i)})
		run.Labels = append(run.Labels, i)
	}
	h := &plugins.Host{Self: []string{exe, "plugins", "serve"}, Timeout: 10 * time.Minute}
	defer h.Close()
	st, err := h.Strategy("lcl")
	if err != nil {
		return err
	}
	ctx := context.Background()
	t0 := time.Now()
	if _, err := st.Begin(ctx, run); err != nil {
		return err
	}
	fmt.Printf("  %-44s %7.2f s\n", fmt.Sprintf("Begin (the %d×%d similarity to the plugin)", c, c), time.Since(t0).Seconds())
	run.Similarity, sim = nil, nil
	debug.FreeOSMemory()
	worst := 0.0
	for e := 0; e < epochs; e++ {
		debug.FreeOSMemory() // the last plan's targets, as the trainer's bridge does
		t := time.Now()
		p, err := st.Plan(ctx, sdk.PlanAt{Epoch: e})
		if err != nil {
			return err
		}
		secs := time.Since(t).Seconds()
		worst = max(worst, secs)
		if len(p.Targets.Data) != c*c {
			return fmt.Errorf("epoch %d: %d target values", e, len(p.Targets.Data))
		}
		fmt.Printf("  %-44s %7.2f s  (true-class mass of class 0: %.4f)\n", fmt.Sprintf("Plan epoch %d (update + %d×%d targets back)", e, c, c), secs, p.Targets.Data[0])
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	verdict := "PASS"
	if worst > limit {
		verdict = "FAIL"
	}
	fmt.Printf("  slowest plan %.2f s (bound %.0f s): %s; host heap at the end %.1f GB\n", worst, limit, verdict, float64(ms.HeapInuse)/1e9)
	if verdict == "FAIL" {
		return fmt.Errorf("a plan took %.2f s", worst)
	}
	return nil
}
