package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/trainer"
)

// trainOptions are lcl train's flags: the run's TrainSpec, which they bind
// to, and --config, a file that gives it instead.
type trainOptions struct {
	spec   experiment.TrainSpec
	config string
}

func newTrainCmd(f *Factory) *cobra.Command {
	o := &trainOptions{spec: experiment.NewTrainSpec()}
	o.spec.Exec.DistBind = os.Getenv("LCL_DIST_BIND")
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a classifier with a strategy",
		Long: `Train an image classifier on libtorch with a training strategy.

The data set is --data: a spec KIND[:DIR][?KEY=VALUE&...] (fashion-mnist,
mnist, cifar10, cifar100, folder, cub, nabirds, synthetic; see docs/data.md;
ImageNet is folder:DIR with DIR/train and DIR/val), or a plain
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
--step-size --warmup --optimizer --betas --eps --optim-param
--clip-grad-norm --ema-decay override (--optimizer adamw --lr 1e-3:
torch.optim's AdamW). The optimizers (lcl models lists their parameters):
` + trainer.OptimizerNames() + `.

Augmentation on top of the data set's crop and flip (docs/data.md):
--randaugment N,M (torchvision's RandAugment: N ops at magnitude bin M of
31, e.g. 2,9) or --trivialaugment (TrivialAugmentWide), and
--random-erasing P (RandomErasing after normalisation, the box set to the
channel mean). They run on the uint8 images in the data workers, drawn per
example from the run seed, epoch and example, and are recorded in
result.json and the run's identity.
--mixup A and --cutmix A mix each training batch with itself mirrored,
λ ~ Beta(A, A) per batch, the targets mixed alike (timm's Mixup; with both,
either per batch: --mix-switch-prob; --mix-prob mixes only some batches),
drawn from the run seed, epoch and step.

Model selection: --val-fraction F holds out a class-stratified part of the
training set; every epoch reports its validation figures, the epoch with the
best --select metric is kept (model-best.safetensors), --patience N stops
early, and the test set is evaluated once, on the selected weights
(--test-every-epoch also every epoch). The final figures and result.json's
"selection" say which epoch's weights they are of.

When the label set has a hierarchy (its own: nabirds, cub, awa2; else
WordNet, for classes with wnids) every test evaluation also reports the
hierarchical metrics of Bertinetto et al. (CVPR 2020): mistake severity and
hierarchical distance@1/5/20, on the LCA heights of the lca source's height
form (docs/trainer.md, "Hierarchical metrics").

The run directory (--out) receives metrics.jsonl (one line per epoch),
metrics.csv (the same as a table), TensorBoard event files (scalars per epoch
and every --log-every steps: tensorboard --logdir runs/),
checkpoint.safetensors (every --checkpoint-every epochs, at the end and on
Ctrl-C), model.safetensors (final weights, torchvision names) and
result.json. --resume continues a stopped run from its checkpoint to the same
final metrics as an uninterrupted run; a checkpoint of another configuration
is refused with the reason. --resume with a larger --epochs continues a
finished (or stopped) run to the new length, the learning-rate schedule
recomputed for it. The result is also stored in the store as a run.

--config FILE reads the run from a YAML file with the keys of a grid's cell
(labels, data, model, fraction, strategy, source, params, seed, epochs,
preset, args, device, threads, nproc, channels-last; docs/trainer.md); flags
given too override it.

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
  lcl train --config run.yaml --out runs/from-file
  lcl train --out runs/fm-cnn --resume --epochs 40 ...same flags...   # continue a finished 20-epoch run
  lcl train --synsets fashion-mnist --model cnn --optimizer adamw --lr 1e-3 --weight-decay 0.05 \
      --clip-grad-norm 1 --ema-decay 0.999 --val-fraction 0.1 --patience 5 --out runs/fm-adamw
  lcl train --data folder:/data/awa2 --model resnet50 --init resnet50.safetensors --init-skip fc --out runs/ft
  lcl train --data cifar100:/data/cifar-100-binary --model torchscript:mynet.pt --preset wrn-cifar --out runs/ts
  lcl train --synsets fashion-mnist --model cnn --nproc 2 --batch 256 --out runs/fm-cnn-ddp
  export LCL_DIST_SECRET=...   # the same on every node
  torchrun --no-python --nnodes 2 --nproc-per-node 4 --node-rank $R --master-addr node0 --master-port 29500 \
      lcl train --data folder:/data/imagenet --model resnet50 --preset goyal --out /shared/runs/in-r50`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), f, cmd, o)
		},
	}
	fl := cmd.Flags()
	experiment.BindTrainFlags(fl, &o.spec)
	fl.StringVar(&o.config, "config", "", "read the run from a YAML file with the keys of a grid's cell (labels, data, model, fraction, strategy, source, params, seed, epochs, preset, args, device, threads, nproc, channels-last); flags given too override it")
	return cmd
}

// resolve is the spec to run: the flags, or --config FILE with the flags
// given on the command line over it.
func (o *trainOptions) resolve(fs *pflag.FlagSet) (experiment.TrainSpec, error) {
	if o.config == "" {
		return o.spec, nil
	}
	spec, err := experiment.LoadTrainSpec(o.config)
	if err != nil {
		return spec, usagef("--config: %v", err)
	}
	spec.Exec.DistBind = o.spec.Exec.DistBind
	var ferr error
	fs.Visit(func(fl *pflag.Flag) {
		if !experiment.IsTrainFlag(fl.Name) || ferr != nil {
			return // --config itself, global flags
		}
		values := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		if err := spec.SetTrainFlag(fl.Name, values...); err != nil {
			ferr = err
		}
	})
	if ferr != nil {
		return spec, usagef("%v", ferr)
	}
	return spec, nil
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
