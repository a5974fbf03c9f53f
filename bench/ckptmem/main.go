// Command ckptmem measures the memory a run needs to write its checkpoint
// and weights. It trains ResNet-50 (CIFAR stem, 1000 classes: 25.6 M
// parameters, about 205 MB of state with the SGD momentum) for two steps of
// two random 32×32 images, resets the peak RSS (/proc/self/clear_refs) when
// the epoch's metrics arrive (after the evaluation, before the writes), and
// prints the peak RSS above the resident size at that point while Run writes
// checkpoint.safetensors and model.safetensors. Linux only.
//
//	go run ./bench/ckptmem [-model resnet50:stem=cifar]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/torch"
)

// images is a data set of n random 3×32×32 images.
type images struct {
	n       int
	classes int
}

func (d images) Len() int             { return d.n }
func (d images) NumClasses() int      { return d.classes }
func (d images) Shape() (c, h, w int) { return 3, 32, 32 }
func (d images) Label(i int) int      { return i % d.classes }

type pass struct {
	d     images
	order []int
	batch int
}

func (p *pass) Next() (*trainer.MiniBatch, error) {
	if len(p.order) == 0 {
		return nil, io.EOF
	}
	k := min(p.batch, len(p.order))
	b := &trainer.MiniBatch{N: k, X: make([]float32, k*3*32*32)}
	r := rand.New(rand.NewPCG(uint64(p.order[0]), 1))
	for j := range b.X {
		b.X[j] = float32(r.NormFloat64())
	}
	for _, i := range p.order[:k] {
		b.Y, b.Index = append(b.Y, int64(p.d.Label(i))), append(b.Index, i)
	}
	p.order = p.order[k:]
	return b, nil
}

func load(_ context.Context, ds trainer.Examples, c trainer.Pass) (trainer.Batches, error) {
	d := ds.(images)
	order := c.Indices
	if order == nil {
		for i := range d.n {
			order = append(order, i)
		}
	}
	return &pass{d: d, order: append([]int(nil), order...), batch: c.Batch}, nil
}

// status returns a field of /proc/self/status in bytes.
func status(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				log.Fatal(err)
			}
			return kb << 10
		}
	}
	log.Fatalf("no %s in /proc/self/status", field)
	return 0
}

func main() {
	model := flag.String("model", "resnet50:stem=cifar", "architecture (a models registry name)")
	flag.Parse()
	// Run as lcl does: its allocator, BLAS and OpenMP settings.
	rt, err := torch.DefaultRuntime()
	if err != nil {
		log.Fatal(err)
	}
	if err := torch.Init(rt); err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ckptmem")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var base int64
	cfg := trainer.Config{Out: dir, Model: *model, Train: images{4, 1000}, Test: images{2, 1000}, BatchSource: load,
		Planner: sl{}, Strategy: "sl", Threads: 2,
		Optim: trainer.Optim{Epochs: 1, Batch: 2, Momentum: 0.9, Schedule: trainer.Schedule{Kind: "constant", LR: 0.01}},
		OnEpoch: func(trainer.EpochMetrics) {
			// Evaluation is done; what follows is the checkpoint and the weights.
			if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
				log.Fatal(err)
			}
			base = status("VmRSS")
		}}
	if _, err := trainer.Run(context.Background(), cfg); err != nil {
		log.Fatal(err)
	}
	peak := status("VmHWM")
	ck, err := os.Stat(filepath.Join(dir, "checkpoint.safetensors"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: checkpoint %.1f MB; resident before the writes %.1f MB, peak while writing %.1f MB (+%.1f MB)\n",
		*model, float64(ck.Size())/1e6, float64(base)/1e6, float64(peak)/1e6, float64(peak-base)/1e6)
}

// sl is plain supervised learning.
type sl struct{}

func (sl) Stages() []trainer.Stage { return []trainer.Stage{{Name: "train"}} }
func (sl) Plan(context.Context, trainer.PlanContext) (trainer.Plan, error) {
	return trainer.Plan{}, nil
}
