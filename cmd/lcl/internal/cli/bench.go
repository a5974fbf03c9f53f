package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
	"github.com/lcl-project/lcl/trainer/torch"
)

func newBenchCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure training steps and the image pipeline (used by scripts/gpu-check.sh)",
		Long: `Measurements behind scripts/gpu-check.sh and bench/*.sh. Each subcommand
prints one JSON line on stdout.`,
	}
	cmd.AddCommand(newBenchStepCmd(f), newBenchLoaderCmd(f), newBenchJPEGsCmd(f), newBenchInfoCmd(f))
	return cmd
}

func printJSON(f *Factory, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Out, string(b))
	return nil
}

func newBenchInfoCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "The libtorch lcl runs on: version, CUDA devices, c10d, BLAS, JPEG decoder",
		Args:  noArgsOrUsage,
		RunE: func(*cobra.Command, []string) error {
			info := map[string]any{"libtorch": torch.Version(), "available": torch.Available(),
				"dist": torch.HasDist(), "dist_backends": torch.DistBackends(), "jpeg": data.JPEGDecoder(), "cpus": runtime.NumCPU()}
			if err := torch.Check(); err != nil {
				info["error"] = err.Error()
				return printJSON(f, info)
			}
			var err error
			if info["cuda_devices"], err = torch.CUDADevices(); err != nil {
				return err
			}
			if info["threads"], err = torch.Threads(); err != nil {
				return err
			}
			// The BLAS libtorch's matrix products run on: a benchmark's figure
			// on Netlib's reference BLAS says little (docs/trainer.md, "The BLAS").
			if b, err := torch.LoadedBLAS(); err == nil && b.Kind != "" {
				info["blas"] = b.Kind
			}
			return printJSON(f, info)
		},
	}
}

func newBenchJPEGsCmd(f *Factory) *cobra.Command {
	var dir, size string
	var n, quality, classes int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "jpegs",
		Short: "Write a folder data set of synthetic photograph-like JPEGs",
		Long: `Writes --n synthetic JPEGs of --size (default 500x375, the typical ImageNet
image) at --quality as a folder data set (train/cK/*.jpg, one image per class
also under val/), for lcl bench loader and bench/imagepipe.sh.`,
		Example: `  lcl bench jpegs --out /tmp/jpegs --n 300`,
		Args:    noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usagef("--out is required")
			}
			if err := checkWhole(wholeFlag{"n", n, 1, maxImages}, wholeFlag{"quality", quality, 1, 100},
				wholeFlag{"classes", classes, 1, max(n, 1)}); err != nil {
				return err
			}
			var w, h int
			if _, err := fmt.Sscanf(size, "%dx%d", &w, &h); err != nil {
				return usagef("--size %q: want WxH", size)
			}
			if err := data.WriteJPEGFolder(cmd.Context(), dir, n, w, h, quality, classes, seed); err != nil {
				return err
			}
			return printJSON(f, map[string]any{"dir": dir, "images": n, "size": size, "quality": quality})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "out", "", "folder to write (required)")
	fl.IntVar(&n, "n", 300, "images")
	fl.StringVar(&size, "size", "500x375", "image size WxH")
	fl.IntVar(&quality, "quality", 90, "JPEG quality")
	fl.IntVar(&classes, "classes", 10, "class folders")
	fl.Uint64Var(&seed, "seed", 1, "seed of the pixels")
	return cmd
}

func newBenchLoaderCmd(f *Factory) *cobra.Command {
	var spec string
	var lc data.LoaderConfig
	var passes int
	var float bool
	var randAugment string
	cmd := &cobra.Command{
		Use:   "loader",
		Short: "Images per second of the training data pipeline",
		Long: `Times --passes shuffled training passes of the loader over the training split
of --data (decoding, training augmentation, batches of --batch) with
--workers goroutines, and prints images per second. Batches are uint8, as
lcl train makes them for image data (normalised on the device), unless
--float. --randaugment, --trivialaugment and --random-erasing add lcl
train's policies of the same names. LCL_JPEG=go selects Go's JPEG decoder
instead of libjpeg-turbo.`,
		Example: `  lcl bench loader --data folder:/tmp/jpegs --workers 1
  lcl bench loader --data folder:/tmp/jpegs --workers 16 --batch 256 --passes 3
  lcl bench loader --data cifar100:/tmp/cifar --workers 1 --randaugment 2,9`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if spec == "" {
				return usagef("--data is required")
			}
			if err := checkWhole(wholeFlag{"batch", lc.Batch, 1, trainer.MaxBatch}, wholeFlag{"workers", lc.Workers, 0, experiment.MaxProcs},
				wholeFlag{"passes", passes, 1, trainer.MaxEpochs}); err != nil {
				return err
			}
			if randAugment != "" {
				n, m, err := data.ParseRandAugment(randAugment)
				if err != nil {
					return usagef("--randaugment %s: %v", randAugment, err)
				}
				lc.Augment.RandAugmentN, lc.Augment.RandAugmentM = n, m
			}
			if err := lc.Augment.Check(); err != nil {
				return usagef("%v", err)
			}
			train, _, err := data.Open(spec)
			if err != nil {
				return err
			}
			if _, ok := train.(data.U8Decoder); ok && !float {
				lc.U8 = true
			}
			m, err := data.MeasureLoader(cmd.Context(), train, lc, passes)
			if err != nil {
				return err
			}
			return printJSON(f, m)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&spec, "data", "", "data set spec (required), e.g. folder:DIR")
	fl.IntVar(&lc.Batch, "batch", 64, "batch size")
	fl.IntVar(&lc.Workers, "workers", 0, "decoding goroutines (0 = number of CPUs)")
	fl.IntVar(&passes, "passes", 1, "passes over the training split")
	fl.BoolVar(&float, "float", false, "normalised float32 batches instead of uint8")
	fl.StringVar(&randAugment, "randaugment", "", "RandAugment N,M (as lcl train's), e.g. 2,9")
	fl.BoolVar(&lc.Augment.TrivialAugment, "trivialaugment", false, "TrivialAugmentWide (as lcl train's)")
	fl.Float64Var(&lc.Augment.Erasing, "random-erasing", 0, "random erasing with this probability (as lcl train's)")
	return cmd
}

type benchStepOptions struct {
	trainer.StepBench
	Input, Precision string
}

func newBenchStepCmd(f *Factory) *cobra.Command {
	o := &benchStepOptions{}
	cmd := &cobra.Command{
		Use:   "step",
		Short: "Training steps per second of a model on random data",
		Long: `Times training steps of --model on one random uint8 batch of --input,
staged anew every step like a real run (pinned memory, a non-blocking copy,
normalisation on the device) and run as lcl train runs them (one OS thread,
the generator seeded every step, the metrics read every step on the CPU and
every 50 on CUDA), with the soft-target loss and SGD (Nesterov, weight decay
5e-4) of bench/step_ref.py, its PyTorch eager counterpart. lcl's one step
benchmark: bench/trainer.sh, bench/models.sh and scripts/gpu-check.sh run it.
Prints img_per_s, img_per_cpu_s (per CPU second of the process), step_ms,
the mean loss, and the peak bytes allocated and reserved on the device (-1
where the libtorch cannot tell). --mixup and --cutmix mix every step's batch
as lcl train's do (timm's batch mode; bench/step_ref.py mixes as timm's
Mixup), to time what mixing adds to a step; with --mix-compare the process
runs --steps mixed and --steps unmixed steps in alternating blocks of 10 and
prints both rates (unmixed_img_per_s, unmixed_img_per_cpu_s) and
mix_cost_pct, so that the cost does not drown in run-to-run noise.`,
		Example: `  lcl bench step --model resnet50:stem=imagenet --input 3,224,224 --classes 1000 --batch 256 \
      --device cuda:0 --precision bf16 --channels-last
  lcl bench step --model resnet18:stem=cifar --input 3,32,32 --batch 64 --steps 5 --threads 2`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkWhole(wholeFlag{"classes", o.Classes, 1, 1 << 20}, wholeFlag{"batch", o.Batch, 1, trainer.MaxBatch},
				wholeFlag{"steps", o.Steps, 1, trainer.MaxEpochs}, wholeFlag{"warmup", o.Warmup, 0, trainer.MaxEpochs}); err != nil {
				return err
			}
			if err := checkFinite(finiteFlag{"mixup", o.Mix.Mixup, 0, math.MaxFloat64}, finiteFlag{"cutmix", o.Mix.CutMix, 0, math.MaxFloat64}); err != nil {
				return err
			}
			p, err := torch.ParsePrecision(o.Precision)
			if err != nil {
				return usagef("--precision: %v", err)
			}
			o.StepBench.Precision = p
			if o.C, o.H, o.W, err = parseShape(o.Input); err != nil {
				return usagef("--input: %v", err)
			}
			if o.MixCompare && !o.Mix.On() {
				return usagef("--mix-compare needs --mixup or --cutmix: it compares mixed steps with unmixed ones")
			}
			if !torch.Available() {
				return torch.ErrNoLibtorch
			}
			res, err := trainer.MeasureSteps(cmd.Context(), o.StepBench)
			if err != nil {
				return err
			}
			return printJSON(f, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Model, "model", "resnet18:stem=cifar", "architecture (lcl models)")
	fl.StringVar(&o.Input, "input", "3,32,32", "input shape C,H,W")
	fl.IntVar(&o.Classes, "classes", 10, "classes")
	fl.IntVar(&o.Batch, "batch", 64, "batch size")
	fl.IntVar(&o.Steps, "steps", 10, "timed steps")
	fl.IntVar(&o.Warmup, "warmup", 3, "untimed steps first")
	fl.StringVar(&o.Device, "device", "cpu", "cpu, cuda or cuda:N")
	fl.StringVar(&o.Precision, "precision", "fp32", "fp32, bf16 or fp16 (autocast)")
	fl.BoolVar(&o.ChannelsLast, "channels-last", false, "channels-last memory format")
	fl.BoolVar(&o.TF32, "tf32", true, "allow TF32 in float32 matmuls and convolutions (CUDA)")
	fl.BoolVar(&o.CUDNNBenchmark, "cudnn-benchmark", true, "cuDNN autotuning (CUDA)")
	fl.Uint64Var(&o.Seed, "seed", 1, "seed of the weights and the batch")
	fl.Float64Var(&o.Mix.Mixup, "mixup", 0, "mix every step's batch: mixup's α (as lcl train's)")
	fl.Float64Var(&o.Mix.CutMix, "cutmix", 0, "mix every step's batch: CutMix's α (as lcl train's)")
	fl.BoolVar(&o.MixCompare, "mix-compare", false, "with --mixup/--cutmix: time mixed and unmixed steps in turns")
	var threads int
	fl.IntVar(&threads, "threads", 0, "libtorch threads (0 = libtorch's default)")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if err := checkWhole(wholeFlag{"threads", threads, 0, experiment.MaxProcs}); err != nil {
			return err
		}
		if threads > 0 {
			return torch.SetThreads(threads)
		}
		return nil
	}
	return cmd
}

// checkWhole refuses a whole-number flag outside lo..hi, worded as lcl
// train's rows word theirs; checkFinite a number flag that is not finite
// or outside lo..hi. The first refusal of each list is returned.
func checkWhole(flags ...wholeFlag) error {
	for _, f := range flags {
		if f.v < f.lo || f.v > f.hi {
			return usagef("--%s %d: want a whole number from %d to %d", f.name, f.v, f.lo, f.hi)
		}
	}
	return nil
}

type wholeFlag struct {
	name      string
	v, lo, hi int
}

func checkFinite(flags ...finiteFlag) error {
	for _, f := range flags {
		if !(f.v >= f.lo && f.v <= f.hi) { // NaN fails both
			return usagef("--%s %g: want a finite value from %g to %g", f.name, f.v, f.lo, f.hi)
		}
	}
	return nil
}

type finiteFlag struct {
	name      string
	v, lo, hi float64
}

// maxImages bounds lcl bench jpegs --n: ten million images of 500×375 are
// about a terabyte.
const maxImages = 10_000_000

// parseShape parses C,H,W.
func parseShape(s string) (c, h, w int, err error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("%q: want C,H,W", s)
	}
	var v [3]int
	for i, p := range parts {
		if v[i], err = strconv.Atoi(strings.TrimSpace(p)); err != nil || v[i] < 1 {
			return 0, 0, 0, fmt.Errorf("%q: want three positive integers C,H,W", s)
		}
	}
	return v[0], v[1], v[2], nil
}
