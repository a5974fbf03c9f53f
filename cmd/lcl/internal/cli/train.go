package cli

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/trainer"
)

type trainOptions struct {
	Synsets, Data, Model, Strategy, Device, Out, Preset string
	Fraction                                            float64
	Seed                                                int64
	Threads, Workers, EvalBatch, CheckpointEvery        int
	TrustModel                                          bool
	Resume, NoStore                                     bool
	Init                                                string
	InitSkip                                            []string

	// GPU path (docs/trainer.md, "GPU training").
	Precision                          string
	ChannelsLast, TF32, CUDNNBenchmark bool
	MetricsEvery                       int

	// Data parallelism (docs/experiment.md, "Running on a cluster").
	NProc       int
	DistTimeout time.Duration
	DistBackend string
	DistBind    string
	world       int // processes of the run (1, --nproc, or WORLD_SIZE)

	// Optimisation overrides of the preset (applied only when given).
	Epochs, Batch, Warmup, StepSize  int
	LR, Momentum, WeightDecay, Gamma float64
	Nesterov                         bool
	Schedule, Milestones, Optimizer  string

	strat strategyOptions // --param, --epsilon, --source, --matrix, --plugin-timeout
}

func newTrainCmd(f *Factory) *cobra.Command {
	o := &trainOptions{}
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a classifier with a strategy",
		Long: `Train an image classifier on libtorch with a training strategy.

The data set is --data: a spec KIND[:DIR][?KEY=VALUE&...] (fashion-mnist,
mnist, cifar10, cifar100, folder, cub, nabirds; see docs/data.md), or a plain
directory read as the kind named by --synsets. --fraction keeps a seeded,
class-stratified part of the training set (the paper's DR); the test set is
always whole.

The architecture is --model: a name of lcl models with options
(resnext101-32x8d, densenet:depth=100,growth=12, ...), or
torchscript:FILE.pt, a module saved by torch.jit.script/trace, trained with
every strategy (its penultimate features: its method "penultimate", else the
input of its last linear layer). A TorchScript file is a program that runs as
you (part of it while it loads): lcl refuses one that someone else owns or
can write (as plugins), one whose digest differs from the one pinned with
torchscript:FILE.pt@sha256:HEX, and one whose code calls an operator that
reaches the file system, the network or the terminal (torch.save,
torch.from_file, RPC, print, ...) unless --trust-model; it checks its logits
in training and evaluation mode. --init FILE.safetensors starts from existing
weights (lcl's model.safetensors, or a torchvision/timm state dict written as
safetensors: docs/trainer.md), loaded strictly; --init-skip fc keeps the
classifier at its initialisation, for another number of classes.

The optimisation protocol is a preset (lcl models lists them; the default
depends on the model) whose settings the flags --epochs --batch --lr
--momentum --nesterov --weight-decay --schedule --milestones --gamma
--step-size --warmup --optimizer override.

The run directory (--out) receives metrics.jsonl (one line per epoch),
checkpoint.safetensors (every --checkpoint-every epochs, at the end and on
Ctrl-C), model.safetensors (final weights, torchvision names) and
result.json. --resume continues a stopped run from its checkpoint to the same
final metrics as an uninterrupted run; a checkpoint of another configuration
is refused with the reason. The result is also stored in the store as a run.

Data-parallel runs (--nproc, torchrun, srun, Kubernetes): every rank needs the
same per-run secret in $LCL_DIST_SECRET (--nproc makes one); rank 0's
rendezvous store listens only on MASTER_ADDR (or --dist-bind ADDR; a wildcard
only with --dist-bind any). Ctrl-C ends a rank within a second, even while it
waits for its peers. See docs/experiment.md.`,
		Example: `  lcl train --synsets fashion-mnist --model cnn --strategy sl --epochs 5 --threads 2 --out runs/fm-cnn
  lcl train --synsets fashion-mnist --data /usr/share/datasets/fashion-mnist --model cnn --strategy sl \
      --fraction 0.1 --epochs 20 --seed 1 --threads 2 --device cpu --out runs/fm-cnn-dr10
  lcl train --data cifar100:/data/cifar-100-binary --model wrn-28-10 --preset wrn-cifar --device cuda --out runs/wrn
  lcl train --out runs/fm-cnn --resume ...same flags...
  lcl train --data folder:/data/awa2 --model resnet50 --init resnet50.safetensors --init-skip fc --out runs/ft
  lcl train --data cifar100:/data/cifar-100-binary --model torchscript:mynet.pt --preset wrn-cifar --out runs/ts
  lcl train --synsets fashion-mnist --model cnn --nproc 2 --batch 256 --out runs/fm-cnn-ddp
  export LCL_DIST_SECRET=...   # the same on every node
  torchrun --no-python --nnodes 2 --nproc-per-node 4 --node-rank $R --master-addr node0 --master-port 29500 \
      lcl train --data imagenet:/data/imagenet --model resnet50 --preset goyal --out /shared/runs/in-r50`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), f, cmd, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Synsets, "synsets", "", "label set of the data (fashion-mnist, cifar100, ...): the data kind when --data is a directory")
	fl.StringVar(&o.Data, "data", "", "data set spec KIND[:DIR][?opts] or a directory (default: the --synsets kind at its default place)")
	fl.StringVar(&o.Model, "model", "cnn", "architecture NAME[:key=value,...] (lcl models), or torchscript:FILE.pt[@sha256:HEX]")
	fl.BoolVar(&o.TrustModel, "trust-model", false, "let a TorchScript model call operators that reach the file system, the network or the terminal")
	fl.StringVar(&o.Strategy, "strategy", "sl", "training strategy: a built-in (sl, ls, lcl, kd, dml, cn) or a plugin (lcl plugins list)")
	o.strat.addParamFlags(fl)
	fl.Float64Var(&o.Fraction, "fraction", 1, "part of the training set to use, class-stratified (0 < f ≤ 1)")
	fl.Int64Var(&o.Seed, "seed", 1, "seed of the subset, initialisation, order, augmentation and dropout")
	fl.IntVar(&o.Threads, "threads", 0, "libtorch threads (0 = libtorch's default)")
	fl.StringVar(&o.Device, "device", "cpu", "cpu, cuda or cuda:N")
	fl.StringVar(&o.Out, "out", "", "run directory (default runs/DATA-MODEL-STRATEGY-sSEED)")
	fl.StringVar(&o.Preset, "preset", "", "optimisation preset (default by model: fmnist-cnn, cifar-resnet, imagenet-resnet, wrn-cifar)")
	fl.IntVar(&o.Epochs, "epochs", 0, "epochs (overrides the preset)")
	fl.IntVar(&o.Batch, "batch", 0, "batch size (overrides the preset)")
	fl.Float64Var(&o.LR, "lr", 0, "base learning rate (overrides the preset)")
	fl.Float64Var(&o.Momentum, "momentum", 0, "SGD momentum (overrides the preset)")
	fl.BoolVar(&o.Nesterov, "nesterov", false, "Nesterov momentum (overrides the preset)")
	fl.Float64Var(&o.WeightDecay, "weight-decay", 0, "L2 weight decay (overrides the preset)")
	fl.StringVar(&o.Schedule, "schedule", "", "learning-rate schedule: constant, cosine, step or multistep (overrides the preset)")
	fl.StringVar(&o.Milestones, "milestones", "", "multistep epochs, e.g. 60,120,160")
	fl.Float64Var(&o.Gamma, "gamma", 0, "step/multistep decay factor")
	fl.IntVar(&o.StepSize, "step-size", 0, "step schedule: decay every N epochs")
	fl.IntVar(&o.Warmup, "warmup", 0, "epochs of linear learning-rate warm-up")
	fl.StringVar(&o.Optimizer, "optimizer", "", "sgd or rmsprop (TensorFlow's, decay 0.9, ε 1; overrides the preset)")
	fl.IntVar(&o.CheckpointEvery, "checkpoint-every", 1, "write a checkpoint every N epochs (0: only at the end and on Ctrl-C)")
	fl.BoolVar(&o.Resume, "resume", false, "continue the run in --out from its checkpoint")
	fl.StringVar(&o.Init, "init", "", "start from the weights of a safetensors file (lcl's model.safetensors, or a torchvision/timm state dict: docs/trainer.md), loaded strictly")
	fl.StringSliceVar(&o.InitSkip, "init-skip", nil, "with --init: module prefixes to keep at their initialisation, e.g. fc (a classifier for other classes)")
	fl.IntVar(&o.Workers, "workers", 0, "data decoding goroutines (0 = number of CPUs)")
	fl.IntVar(&o.EvalBatch, "eval-batch", 256, "evaluation batch size")
	fl.BoolVar(&o.NoStore, "no-store", false, "do not record the run in the store")
	fl.IntVar(&o.NProc, "nproc", 1, "data-parallel worker processes on this machine (Gloo over loopback); --batch is the global batch")
	fl.DurationVar(&o.DistTimeout, "dist-timeout", 10*time.Minute, "data-parallel: how long a rank waits for a stalled peer before failing")
	fl.StringVar(&o.DistBackend, "dist-backend", "gloo", "data-parallel collectives: gloo (CPU) or nccl (CUDA builds)")
	fl.StringVar(&o.DistBind, "dist-bind", os.Getenv("LCL_DIST_BIND"), "data-parallel, rank 0: the address its rendezvous store listens on (default MASTER_ADDR; \"any\": every interface; also $LCL_DIST_BIND)")
	fl.StringVar(&o.Precision, "precision", "fp32", "forward passes in fp32, bf16 or fp16 (autocast; fp16 with dynamic loss scaling, CUDA only); weights, optimizer and checkpoints stay fp32")
	fl.BoolVar(&o.ChannelsLast, "channels-last", false, "channels-last (NHWC) memory format for models and inputs (CPU too: the small CNN trains 1.3x faster)")
	fl.BoolVar(&o.TF32, "tf32", true, "allow TF32 in float32 matmuls and convolutions (CUDA)")
	fl.BoolVar(&o.CUDNNBenchmark, "cudnn-benchmark", true, "cuDNN autotuning of convolution algorithms (CUDA)")
	fl.IntVar(&o.MetricsEvery, "metrics-every", 0, "read the training loss and accuracy from the device every N steps (0: every step on the CPU, 50 on CUDA)")
	return cmd
}

// optim resolves the preset (--preset, else the model's default) and the
// flags that override it.
func (o *trainOptions) optim(fs *pflag.FlagSet, h int) (trainer.Optim, string, error) {
	name := o.Preset
	if name == "" {
		name = trainer.DefaultPreset(o.Model, h)
	}
	p, err := trainer.PresetByName(name)
	if err != nil {
		return trainer.Optim{}, "", usagef("--preset: %v", err)
	}
	given := map[string]string{}
	for _, flag := range trainer.OverrideFlags() {
		if fl := fs.Lookup(flag); fl.Changed {
			given[flag] = fl.Value.String()
		}
	}
	ov, err := trainer.ParseOverrides(given)
	if err != nil {
		return trainer.Optim{}, "", usagef("%v", err)
	}
	op, err := p.Apply(o.world, ov)
	if err != nil {
		return trainer.Optim{}, "", usagef("%v", err)
	}
	return op, name, nil
}

// commandLine rebuilds the arguments of cmd as given (every flag set on
// the command line, local or global), without --nproc.
func commandLine(cmd *cobra.Command) []string {
	args := strings.Fields(cmd.CommandPath())[1:]
	seen := map[string]bool{}
	add := func(fl *pflag.Flag) {
		if seen[fl.Name] || fl.Name == "nproc" {
			return
		}
		seen[fl.Name] = true
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+fl.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	}
	cmd.Flags().Visit(add)
	cmd.InheritedFlags().Visit(add)
	return args
}
