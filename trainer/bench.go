package trainer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

// StepBench configures MeasureSteps, lcl's one step benchmark (lcl bench
// step; bench/trainer.sh and the GPU check run it): training steps of one
// model on one random uint8 batch, staged anew every step (pinned memory,
// copy, device normalisation) and run as lcl train runs them (one locked
// OS thread, libtorch's generator seeded every step, the step's metrics
// read every MetricsEvery steps), with the soft-target loss and SGD
// (momentum 0.9, Nesterov, weight decay 5e-4) of bench/step_ref.py, its
// PyTorch counterpart.
type StepBench struct {
	Model          string // e.g. "resnet50:stem=imagenet"
	C, H, W        int
	Classes        int
	Batch          int
	Steps, Warmup  int
	Device         string
	Precision      torch.Precision
	ChannelsLast   bool
	TF32           bool
	CUDNNBenchmark bool
	Seed           uint64
	// MetricsEvery: steps between reads of the step metrics (0: lcl
	// train's default, every step on the CPU, 50 on CUDA).
	MetricsEvery int
	// Mix mixes every step's batch as lcl train's --mixup and --cutmix do
	// (drawn anew each step from Seed; zero: no mixing), so that mixing's
	// share of a step can be timed.
	Mix Mixing
}

// StepBenchResult is what MeasureSteps measured.
type StepBenchResult struct {
	ImgPerSec float64 `json:"img_per_s"`
	// Images per CPU second of the whole process (all threads): steadier
	// than the wall clock on a shared machine.
	ImgPerCPUSec float64 `json:"img_per_cpu_s"`
	StepMS       float64 `json:"step_ms"`
	Loss         float64 `json:"loss"` // mean training loss of the timed steps (finite: the run trained)
	// Peak bytes allocated and reserved by the device's caching allocator
	// (-1 where the build cannot tell).
	PeakAllocated int64 `json:"peak_allocated"`
	PeakReserved  int64 `json:"peak_reserved"`
	Skipped       int   `json:"skipped"` // fp16 steps skipped for non-finite gradients
}

// MeasureSteps times b.Steps training steps after b.Warmup untimed ones.
func MeasureSteps(ctx context.Context, b StepBench) (StepBenchResult, error) {
	if b.Batch < 2 || b.Steps < 1 || b.Warmup < 0 || b.Classes < 2 {
		return StepBenchResult{}, fmt.Errorf("trainer: step benchmark: batch %d, steps %d, warm-up %d, classes %d", b.Batch, b.Steps, b.Warmup, b.Classes)
	}
	if err := b.Mix.Check(); err != nil {
		return StepBenchResult{}, fmt.Errorf("trainer: step benchmark: %w", err)
	}
	// As trainer.Run: libtorch's per-thread state (threads, the autocast
	// and grad modes) stays with the OS thread the steps run on.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := torch.SetCUDAFlags(b.CUDNNBenchmark, b.TF32); err != nil {
		return StepBenchResult{}, err
	}
	if b.MetricsEvery <= 0 {
		b.MetricsEvery = defaultMetricsEvery(b.Device)
	}
	m, opt, err := b.model()
	if err != nil {
		return StepBenchResult{}, err
	}
	defer m.Close()
	defer opt.Close()
	mean, std := benchNormalization(b.C)
	eng, err := torch.NewEngine(b.Device, torch.EngineOptions{Precision: b.Precision, ChannelsLast: b.ChannelsLast, Mean: mean, Std: std})
	if err != nil {
		return StepBenchResult{}, err
	}
	defer eng.Close()
	targets, err := benchTargets(b.Classes, b.Device)
	if err != nil {
		return StepBenchResult{}, err
	}
	defer targets.Close()
	in := b.input()
	step := &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{opt}, Targets: targets,
		Coefs: torch.Coefs{SoftCE: 1}, LR: 0.01}
	scale := 0.0
	if b.Precision == torch.FP16 {
		scale = 65536 // GradScaler's initial scale; fixed here (a benchmark, not a run)
	}
	var res StepBenchResult
	var loss float64
	var seen int64
	run := func(n int) error {
		sk, err := b.runSteps(ctx, eng, step, in, scale, n, &loss, &seen)
		res.Skipped += sk
		return err
	}
	if err := run(b.Warmup); err != nil {
		return res, err
	}
	if _, err := eng.Metrics(1); err != nil { // waits for the warm-up steps
		return res, err
	}
	if err := torch.Synchronize(b.Device); err != nil {
		return res, err
	}
	if _, _, err := torch.DeviceMemory(b.Device, true); err != nil {
		return res, err
	}
	res.Skipped, loss, seen = 0, 0, 0
	t0, cpu0 := time.Now(), processSeconds()
	if err := run(b.Steps); err != nil {
		return res, err
	}
	mt, err := eng.Metrics(1)
	if err != nil {
		return res, err
	}
	if err := torch.Synchronize(b.Device); err != nil {
		return res, err
	}
	el, cpu := time.Since(t0).Seconds(), processSeconds()-cpu0
	res.ImgPerSec = float64(b.Steps*b.Batch) / el
	if cpu > 0 {
		res.ImgPerCPUSec = float64(b.Steps*b.Batch) / cpu
	}
	res.StepMS = 1000 * el / float64(b.Steps)
	if loss, seen = loss+mt.LossSum[0], seen+mt.N; seen > 0 {
		res.Loss = loss / float64(seen)
	}
	res.PeakAllocated, res.PeakReserved, err = torch.DeviceMemory(b.Device, false)
	return res, err
}

// model is the benchmark's model on its device, initialised from its seed,
// and its SGD optimizer.
func (b StepBench) model() (*torch.Model, *torch.Optimizer, error) {
	spec, err := models.Builtin().Get(b.Model, models.Input{C: b.C, H: b.H, W: b.W, NumClasses: b.Classes})
	if err != nil {
		return nil, nil, fmt.Errorf("trainer: %w", err)
	}
	if err := torch.ManualSeed(b.Seed); err != nil {
		return nil, nil, err
	}
	m, err := torch.NewModel(spec, b.Device)
	if err != nil {
		return nil, nil, err
	}
	if b.ChannelsLast {
		if err := m.ChannelsLast(); err != nil {
			m.Close()
			return nil, nil, err
		}
	}
	opt, err := torch.NewSGD(m, 0.9, 5e-4, true)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, opt, nil
}

// benchNormalization is ImageNet's mean and deviation for 3 channels,
// else 0.5 and 0.25 for each.
func benchNormalization(c int) (mean, std []float32) {
	if c == 3 {
		return []float32{0.485, 0.456, 0.406}, []float32{0.229, 0.224, 0.225}
	}
	mean, std = make([]float32, c), make([]float32, c)
	for i := range mean {
		mean[i], std[i] = 0.5, 0.25
	}
	return mean, std
}

// benchTargets are soft targets: 0.9 on the class, the rest spread evenly.
func benchTargets(classes int, device string) (*torch.Tensor, error) {
	T := make([]float32, classes*classes)
	for i := range classes {
		for j := range classes {
			T[i*classes+j] = 0.1 / float32(classes-1)
		}
		T[i*classes+i] = 0.9
	}
	return torch.NewTensor(T, []int64{int64(classes), int64(classes)}, device)
}

// input is the benchmark's batch: random pixels and labels from its seed.
func (b StepBench) input() torch.Input {
	r := rand.New(rand.NewPCG(b.Seed, 7))
	in := torch.Input{N: b.Batch, C: b.C, H: b.H, W: b.W, X8: make([]uint8, b.Batch*b.C*b.H*b.W), Y: make([]int64, b.Batch)}
	for i := range in.X8 {
		in.X8[i] = uint8(r.Uint32())
	}
	for i := range in.Y {
		in.Y[i] = int64(r.IntN(b.Classes))
	}
	return in
}

// runSteps runs n steps on the batch in and returns how many the loss
// scale skipped.
// The metrics read on the way are added to loss and seen.
func (b StepBench) runSteps(ctx context.Context, eng *torch.Engine, step *torch.Step, in torch.Input, scale float64, n int,
	loss *float64, seen *int64) (skipped int, err error) {
	for i := range n {
		if ctx.Err() != nil {
			return skipped, ctx.Err()
		}
		if i == 0 {
			if err := eng.Put(in); err != nil {
				return skipped, err
			}
		}
		if err := torch.ManualSeed(b.Seed + uint64(i)); err != nil { // the training loop seeds every step
			return skipped, err
		}
		// As the training loop: each step's mixing from its own generator.
		step.Mix = b.Mix.draw(rand.New(rand.NewPCG(b.Seed, uint64(i))), b.H, b.W)
		// The next batch is staged after this step is queued, as the
		// training loop does.
		sk, err := eng.Train(step, scale)
		if err != nil {
			return skipped, err
		}
		skipped += sk
		if (i+1)%b.MetricsEvery == 0 && i+1 < n {
			mt, err := eng.Metrics(1)
			if err != nil {
				return skipped, err
			}
			*loss, *seen = *loss+mt.LossSum[0], *seen+mt.N
		}
		if i+1 < n {
			if err := eng.Put(in); err != nil {
				return skipped, err
			}
		}
	}
	return skipped, nil
}

// processSeconds is the process's CPU time so far (user + system, all
// threads), in seconds.
func processSeconds() float64 {
	u, s := processCPU()
	return (u + s).Seconds()
}
