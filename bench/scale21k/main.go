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
	"strconv"
	"strings"
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
		host0, plugin0 := cpuSeconds(os.Getpid()), childrenCPU()
		t := time.Now()
		p, err := st.Plan(ctx, sdk.PlanAt{Epoch: e})
		if err != nil {
			return err
		}
		secs := time.Since(t).Seconds()
		host, plugin := cpuSeconds(os.Getpid())-host0, childrenCPU()-plugin0
		worst = max(worst, secs)
		if len(p.Targets.Data) != c*c {
			return fmt.Errorf("epoch %d: %d target values", e, len(p.Targets.Data))
		}
		fmt.Printf("  %-44s %7.2f s  (CPU: plugin %.2f s, host %.2f s; true-class mass of class 0: %.4f)\n",
			fmt.Sprintf("Plan epoch %d (update + %d×%d targets back)", e, c, c), secs, plugin, host, p.Targets.Data[0])
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	verdict := "PASS"
	if worst > limit {
		verdict = "FAIL"
	}
	fmt.Printf("  slowest plan %.2f s (bound %.0f s), load average %s: %s; host heap at the end %.1f GB\n", worst, limit, loadAverage(), verdict, float64(ms.HeapInuse)/1e9)
	if verdict == "FAIL" {
		return fmt.Errorf("a plan took %.2f s", worst)
	}
	return nil
}

// cpuSeconds is a process's user + system CPU time so far (/proc/PID/stat).
func cpuSeconds(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command: state is field 3, utime 14, stime 15.
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks; 100 per second on Linux
}

// childrenCPU is the CPU time of this process's running children (the
// plugin).
func childrenCPU() float64 {
	total := 0.0
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	for _, t := range tasks {
		raw, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil {
				total += cpuSeconds(pid)
			}
		}
	}
	return total
}

func loadAverage() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
