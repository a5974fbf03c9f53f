// Command trainer measures lcl's training throughput (images per second) of
// one architecture on synthetic data with soft targets, through the engine
// lcl train runs its steps with: the Go side of bench/trainer.sh, whose
// PyTorch side is bench/trainer_ref.py.
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

func main() {
	model := flag.String("model", "cnn", "architecture (lcl models): cnn (Fashion-MNIST shape), resnet18 (CIFAR stem), ...")
	shape := flag.String("shape", "", "input C,H,W (default 1,28,28 for cnn and mlp, else 3,32,32)")
	classes := flag.Int("classes", 10, "classes")
	batch := flag.Int("batch", 128, "batch size")
	steps := flag.Int("steps", 20, "timed steps")
	warm := flag.Int("warmup", 3, "untimed steps")
	threads := flag.Int("threads", 2, "libtorch threads")
	cl := flag.Bool("channels-last", false, "model and inputs in the channels-last memory format")
	lock := flag.Bool("lock", true, "run the steps on one locked OS thread, as trainer.Run does")
	flag.Parse()
	// Run as lcl does: its allocator, BLAS and OpenMP settings.
	rt, err := torch.DefaultRuntime()
	if err != nil {
		log.Fatal(err)
	}
	if err := torch.Init(rt); err != nil {
		log.Fatal(err)
	}
	if *lock {
		runtime.LockOSThread()
	}
	if err := torch.SetThreads(*threads); err != nil {
		log.Fatal(err)
	}
	if err := torch.ManualSeed(0); err != nil {
		log.Fatal(err)
	}
	in := models.Input{C: 3, H: 32, W: 32, NumClasses: *classes}
	if *model == "cnn" || *model == "mlp" {
		in.C, in.H, in.W = 1, 28, 28
	}
	if *shape != "" {
		if _, err := fmt.Sscanf(*shape, "%d,%d,%d", &in.C, &in.H, &in.W); err != nil {
			log.Fatalf("-shape %q: want C,H,W", *shape)
		}
	}
	spec, err := models.Builtin().Get(*model, in)
	if err != nil {
		log.Fatal(err)
	}
	m, err := torch.NewModel(spec, "cpu")
	if err != nil {
		log.Fatal(err)
	}
	if *cl {
		if err := m.ChannelsLast(); err != nil {
			log.Fatal(err)
		}
	}
	o, err := torch.NewSGD(m, 0.9, 5e-4, true)
	if err != nil {
		log.Fatal(err)
	}
	c := spec.NumClasses
	T := make([]float32, c*c)
	for i := range c {
		for j := range c {
			T[i*c+j] = 0.1 / float32(c-1)
		}
		T[i*c+i] = 0.9
	}
	tt, err := torch.NewTensor(T, []int64{int64(c), int64(c)}, "cpu")
	if err != nil {
		log.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := *batch
	x := make([]float32, n*spec.InC*spec.InH*spec.InW)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]int64, n)
	for i := range y {
		y[i] = int64(r.IntN(c))
	}
	// The path lcl train runs (trainer's epoch loop): each step stages its
	// batch in an engine, seeds libtorch's generator, trains and reads the
	// step's metrics (what the loop does on the CPU by default).
	eng, err := torch.NewEngine("cpu", torch.EngineOptions{ChannelsLast: *cl})
	if err != nil {
		log.Fatal(err)
	}
	staged := torch.Input{N: n, C: spec.InC, H: spec.InH, W: spec.InW, X: x, Y: y}
	step := &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Targets: tt, Coefs: torch.Coefs{SoftCE: 1}, LR: 0.01}
	run := func(steps int) {
		for i := range steps {
			if err := eng.Put(staged); err != nil {
				log.Fatal(err)
			}
			if err := torch.ManualSeed(uint64(i)); err != nil {
				log.Fatal(err)
			}
			if _, err := eng.Train(step, 0); err != nil {
				log.Fatal(err)
			}
			if _, err := eng.Metrics(1); err != nil {
				log.Fatal(err)
			}
		}
	}
	run(*warm)
	cpu0 := cpuSeconds()
	start := time.Now()
	run(*steps)
	el := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	imgs := float64(n * *steps)
	// Images per wall-clock second and per CPU second of the whole process
	// (all threads): the second is steadier on a shared machine.
	fmt.Fprintf(os.Stdout, "%.2f %.2f\n", imgs/el, imgs/cpu)
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
