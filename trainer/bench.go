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
	// MixCompare, with Mix, times Steps mixed and Steps unmixed steps in
	// alternating blocks in the one process (StepBenchResult's Unmixed
	// rates and MixCostPct): mixing's cost without the run-to-run noise
	// of two processes on a shared machine.
	MixCompare bool
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
	// With StepBench.MixCompare: the rates above are the mixed steps',
	// these the unmixed steps' of the same process, and MixCostPct how
	// much longer a mixed step took (100·(unmixed img/s ÷ mixed img/s − 1)).
	UnmixedImgPerSec    float64 `json:"unmixed_img_per_s,omitempty"`
	UnmixedImgPerCPUSec float64 `json:"unmixed_img_per_cpu_s,omitempty"`
	MixCostPct          float64 `json:"mix_cost_pct,omitempty"`
}

// MeasureSteps times b.Steps training steps after b.Warmup untimed ones.
func MeasureSteps(ctx context.Context, b StepBench) (StepBenchResult, error) {
	if b.Batch < 2 || b.Steps < 1 || b.Warmup < 0 || b.Classes < 2 {
		return StepBenchResult{}, fmt.Errorf("trainer: step benchmark: batch %d, steps %d, warm-up %d, classes %d", b.Batch, b.Steps, b.Warmup, b.Classes)
	}
	if err := b.Mix.Check(); err != nil {
		return StepBenchResult{}, fmt.Errorf("trainer: step benchmark: %w", err)
	}
	if b.MixCompare && !b.Mix.On() {
		return StepBenchResult{}, fmt.Errorf("trainer: step benchmark: comparing mixed and unmixed steps needs mixup or CutMix")
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
	r := &benchRun{b: b, eng: eng, in: b.input(), step: &torch.Step{Models: []*torch.Model{m},
		Optims: []*torch.Optimizer{opt}, Targets: targets, Coefs: torch.Coefs{SoftCE: 1}, LR: 0.01}}
	if b.Precision == torch.FP16 {
		r.scale = 65536 // GradScaler's initial scale; fixed here (a benchmark, not a run)
	}
	if _, err := r.run(ctx, 0, b.Warmup, b.Mix); err != nil {
		return StepBenchResult{}, err
	}
	if _, _, err := torch.DeviceMemory(b.Device, true); err != nil {
		return StepBenchResult{}, err
	}
	r.loss, r.seen, r.skipped = 0, 0, 0
	var res StepBenchResult
	if b.MixCompare {
		err = r.compare(ctx, &res)
	} else {
		var t stepTime
		t, err = r.run(ctx, b.Warmup, b.Steps, b.Mix)
		res.ImgPerSec, res.ImgPerCPUSec, res.StepMS = t.rates(b.Steps, b.Batch)
	}
	if err != nil {
		return res, err
	}
	res.Skipped = r.skipped
	if r.seen > 0 {
		res.Loss = r.loss / float64(r.seen)
	}
	res.PeakAllocated, res.PeakReserved, err = torch.DeviceMemory(b.Device, false)
	return res, err
}

// mixBlock is how many steps in a row StepBench.MixCompare times mixed,
// then unmixed (or the other way round).
const mixBlock = 10

// compare times b.Steps mixed and b.Steps unmixed steps in alternating
// blocks of mixBlock, the order turned every pair (mixed first, then
// unmixed first), so that both meet the same machine: res's rates are the
// mixed steps', the Unmixed ones the others'.
func (r *benchRun) compare(ctx context.Context, res *StepBenchResult) error {
	var mixed, plain stepTime
	for i, done := 0, 0; done < r.b.Steps; i++ {
		n := min(mixBlock, r.b.Steps-done)
		order := []Mixing{r.b.Mix, {}}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for j, mix := range order {
			t, err := r.run(ctx, r.b.Warmup+2*done+j*n, n, mix)
			if err != nil {
				return err
			}
			if mix.On() {
				mixed = mixed.add(t)
			} else {
				plain = plain.add(t)
			}
		}
		done += n
	}
	res.ImgPerSec, res.ImgPerCPUSec, res.StepMS = mixed.rates(r.b.Steps, r.b.Batch)
	res.UnmixedImgPerSec, res.UnmixedImgPerCPUSec, _ = plain.rates(r.b.Steps, r.b.Batch)
	res.MixCostPct = 100 * (res.UnmixedImgPerSec/res.ImgPerSec - 1)
	return nil
}

// stepTime is the wall-clock and CPU seconds (the whole process's) of some
// steps.
type stepTime struct{ wall, cpu float64 }

func (t stepTime) add(u stepTime) stepTime { return stepTime{t.wall + u.wall, t.cpu + u.cpu} }

// rates are images per second and per CPU second (0 when no CPU time was
// counted) and milliseconds per step of steps steps of batch images.
func (t stepTime) rates(steps, batch int) (perSec, perCPUSec, stepMS float64) {
	perSec = float64(steps*batch) / t.wall
	if t.cpu > 0 {
		perCPUSec = float64(steps*batch) / t.cpu
	}
	return perSec, perCPUSec, 1000 * t.wall / float64(steps)
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

// benchRun is one MeasureSteps's engine, step and batch, and what its
// steps have summed: the loss and examples read from the engine, the steps
// the loss scale skipped.
type benchRun struct {
	b       StepBench
	eng     *torch.Engine
	step    *torch.Step
	in      torch.Input
	scale   float64
	loss    float64
	seen    int64
	skipped int
}

// run runs n steps numbered from first (a step's seeds are its number's),
// each mixed by mix (zero: unmixed), waits for the device, and returns the
// time they took.
func (r *benchRun) run(ctx context.Context, first, n int, mix Mixing) (stepTime, error) {
	t0, cpu0 := time.Now(), processSeconds()
	for j := range n {
		if ctx.Err() != nil {
			return stepTime{}, ctx.Err()
		}
		i := uint64(first + j)
		if j == 0 {
			if err := r.eng.Put(r.in); err != nil {
				return stepTime{}, err
			}
		}
		if err := torch.ManualSeed(r.b.Seed + i); err != nil { // the training loop seeds every step
			return stepTime{}, err
		}
		// As the training loop: each step's mixing from its own generator.
		r.step.Mix = mix.draw(rand.New(rand.NewPCG(r.b.Seed, i)), r.b.H, r.b.W)
		// The next batch is staged after this step is queued, as the
		// training loop does.
		sk, err := r.eng.Train(r.step, r.scale)
		if err != nil {
			return stepTime{}, err
		}
		r.skipped += sk
		if (j+1)%r.b.MetricsEvery == 0 && j+1 < n {
			if err := r.readMetrics(); err != nil {
				return stepTime{}, err
			}
		}
		if j+1 < n {
			if err := r.eng.Put(r.in); err != nil {
				return stepTime{}, err
			}
		}
	}
	if err := r.readMetrics(); err != nil { // waits for the steps
		return stepTime{}, err
	}
	if err := torch.Synchronize(r.b.Device); err != nil {
		return stepTime{}, err
	}
	return stepTime{time.Since(t0).Seconds(), processSeconds() - cpu0}, nil
}

// readMetrics adds the engine's sums since the last read to r's.
func (r *benchRun) readMetrics() error {
	mt, err := r.eng.Metrics(1)
	if err != nil {
		return err
	}
	r.loss, r.seen = r.loss+mt.LossSum[0], r.seen+mt.N
	return nil
}

// processSeconds is the process's CPU time so far (user + system, all
// threads), in seconds.
func processSeconds() float64 {
	u, s := processCPU()
	return (u + s).Seconds()
}
