package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/trainer"
)

// helpTopics are the pages of `lcl help TOPIC` that are no command: what
// lcl train's help names and does not spell out, and the exit codes.
func helpTopics() []*cobra.Command {
	topic := func(use, short, long string) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Long: long}
	}
	return []*cobra.Command{
		topic("exit-codes", "Exit codes of lcl", exitCodesHelp),
		topic("data", "Data sets of lcl train: --data, --synsets, --fraction", dataHelp),
		topic("torchscript", "Models from TorchScript files and starting weights: --model torchscript:, --init", torchScriptHelp),
		topic("recipes", "Presets, optimizers, precision, augmentation, mixing and model selection", recipesHelp()),
		topic("run-dir", "What lcl train writes, --resume and --config", runDirHelp),
		topic("distributed", "Data-parallel training: --nproc, torchrun, srun, Kubernetes", distributedHelp),
		topic("methods", "The strategies' losses and parameters: --strategy, --param", methodsHelp),
	}
}

// methodsHelp is docs/methods.md's table in short: keep the two in step.
const methodsHelp = `Each strategy's loss per example (p = softmax(z), y the label, C classes;
--param NAME=VALUE, defaults in brackets). docs/methods.md has the details
and the reasons for each convention.

  sl        CE(onehot(y), p)
  ls        CE((1−α)·onehot(y) + α/C, p): α spread over all C classes, the
            true one included (as PyTorch's label_smoothing), not α/(C−1)
            [alpha 0.1]
  lcl       CE(v_t[y], p), v_0 = s(c,·)/Σ s(c,·), then per epoch
            v_c ← 1/(1+ε·Σ_{k≠c} v_k), v_j ← ε·v_j/(1+ε·Σ_{k≠c} v_k)
            [epsilon 0.99, per-step false, clip-negative false]
  kd        teacher by sl, then a fresh student on
            (1−α)·CE(onehot(y), p) + α·T²·KL(softmax(z_T/T) ‖ softmax(z/T))
            [alpha 0.9, temperature 4, teacher-model, teacher-epochs]
  dml       K peers, each CE + mutual·mean KL(p_peer ‖ p_self) [peers 2, mutual 1]
  cn        CurriculumNet: sl, then a fresh model on clean → +noisy → all
            [pretrain-epochs, shares 1,1,1, weight 0.5, density-percentile 0.6]
  mbm-soft  CE(y_c, p), y_c[j] ∝ exp(−β·d(c,j)/max d), d = 1 − s [beta 10]
  hxe       −N·Σ_l λ(C_l)·log p(C_l | C_{l+1}) along y's path, λ ∝ exp(−α·depth)
            [alpha 0.1]
  ols       α·CE(onehot(y), p) + (1−α)·CE(S[y], p), S[y] the mean softmax of
            the training examples of class y the model got right in the epoch
            before (the training step's own outputs); epoch 0: smoothing/(C−1)
            [alpha 0.5, smoothing 0.1]
  soft      CE(M[y], p), M your C×C target matrix (--matrix FILE: CSV, TSV,
            text or .npy; rows summing to 1 within 0.001), as given or
            annealed by lcl's rule [anneal 0 (static) or ε, normalize false]
  haframe   the head fixed to class vectors V, V·Vᵀ = S = (1−s_min)·exp(−γ·d/max d)
            + s_min (d: single-linkage distances of 1 − s); (1−α)·CE(onehot(y), p)
            + α·Σ_c (cos(f, V_c) − S_yc)²,
            f the features [alpha 0.4, haf-gamma 2, frame-model]
  haf       a trained head per level of the single-linkage tree of 1 − s (logits
            f·ŵ_lᵀ + b_l, ŵ unit rows); CE(onehot(y), p) + c·Σ_l JSD(p_{l−1}
            summed into level l, p_l) + d·Σ_{l<L} mean over consecutive examples
            of different groups of (3 − JSD) − g·Σ_l mean cos(ŵ_l[g], Σ children)
            [levels 11, consistency 1, dissimilar 1, geometric 1]`

const exitCodesHelp = `lcl exits with
  0    success
  1    failure (bad input, missing data, a failed run); the message says which
  2    usage error (unknown command or flag, missing argument)
  70   internal error: lcl panicked, or the Go runtime stopped it (a bug: a
       fatal error, a library's goroutine that panicked); one line names the
       file with the full report ($XDG_STATE_HOME/lcl or ~/.local/state/lcl).
       lcl runs as a child of a small parent process that writes this report
       and passes signals on
  130  cancelled (Ctrl-C or SIGTERM); work finished so far is kept. A second
       Ctrl-C while lcl stops is answered with a line and does not kill it;
       a third within 5 s of the second kills lcl at once`

const dataHelp = `The data set is --data: a spec KIND[:DIR][?KEY=VALUE&...] (fashion-mnist,
mnist, cifar10, cifar100, folder, cub, nabirds, synthetic; see docs/data.md;
ImageNet is folder:DIR with DIR/train and DIR/val), or a plain directory read
as the kind named by --synsets. --fraction keeps a seeded, class-stratified
part of the training set (the paper's DR); the test set is always whole.

When the label set has a hierarchy (its own: nabirds, cub, awa2; else
WordNet, for classes with wnids) every test evaluation also reports the
hierarchical metrics of Bertinetto et al. (CVPR 2020): mistake severity and
hierarchical distance@1/5/20, on the LCA heights of the lca source's height
form (docs/trainer.md, "Hierarchical metrics").`

const torchScriptHelp = `--model torchscript:FILE.pt is a module saved by torch.jit.script/trace,
trained with every strategy (its penultimate features: its method
"penultimate", else the input of its last linear layer).

A TorchScript file is a program that runs as you (part of it while it
loads): lcl refuses one that someone else owns or can write (as plugins),
one whose digest differs from the one pinned with
torchscript:FILE.pt@sha256:HEX, and one whose code calls an operator that
reaches the file system, the network or the terminal (torch.save,
torch.from_file, RPC, print, ...) unless --trust-model; it checks its logits
in training and evaluation mode.

--init FILE.safetensors starts from existing weights (lcl's
model.safetensors, or a torchvision/timm state dict written as safetensors:
docs/trainer.md), loaded strictly; --init-skip fc keeps the classifier at
its initialisation, for another number of classes.`

const runDirHelp = `The run directory (--out) receives metrics.jsonl (one line per epoch),
metrics.csv (the same as a table), TensorBoard event files (scalars per epoch
and every --log-every steps: tensorboard --logdir runs/),
checkpoint.safetensors (every --checkpoint-every epochs, at the end and on
Ctrl-C), model.safetensors (final weights, torchvision names) and
result.json. The result is also stored in the store as a run (--no-store:
not).

--resume continues a stopped run from its checkpoint to the same final
metrics as an uninterrupted run; a checkpoint of another configuration is
refused with the reason. --resume with a larger --epochs continues a
finished (or stopped) run to the new length, the learning-rate schedule
recomputed for it.

--config FILE reads the run from a YAML file with the keys of a grid's cell
(labels, data, model, fraction, strategy, source, params, seed, epochs,
preset, args, device, threads, nproc, channels-last; docs/trainer.md); flags
given too override it.`

const distributedHelp = `--nproc N trains on N processes of this machine, each with its share of
every batch. Across machines, start lcl train under torchrun, srun or a
Kubernetes indexed Job (docs/experiment.md): every rank needs the same
per-run secret in $LCL_DIST_SECRET (--nproc makes one); rank 0's rendezvous
store listens only on MASTER_ADDR (or --dist-bind ADDR; a wildcard only with
--dist-bind any). Ctrl-C ends a rank within a second, even while it waits
for its peers.

  export LCL_DIST_SECRET=...   # the same on every node
  torchrun --no-python --nnodes 2 --nproc-per-node 4 --node-rank $R --master-addr node0 \
      --master-port 29500 lcl train --data folder:/data/imagenet --model resnet50 --preset goyal \
      --out /shared/runs/in-r50`

// recipesHelp lists the presets and optimizers from their registries.
func recipesHelp() string {
	return wrapWords("The optimisation protocol is a preset ("+strings.Join(trainer.PresetNames(), ", ")+
		"; lcl models describes them; the default depends on the model) whose settings --epochs --batch --lr "+
		"--momentum --nesterov --weight-decay --schedule --milestones --gamma --step-size --warmup --optimizer "+
		"--betas --eps --optim-param --clip-grad-norm --ema-decay override (--optimizer adamw --lr 1e-3: "+
		"torch.optim's AdamW). The optimizers (lcl models lists their parameters): "+trainer.OptimizerNames()+
		". --ema-decay D keeps a moving average of the weights (timm's model EMA), evaluated every epoch "+
		"and saved as model-ema.safetensors.", 78, "") + `

--precision: the forward passes in fp32, bf16 or fp16 (autocast; fp16 with
dynamic loss scaling, CUDA only), or auto: bf16 on CUDA and on CPUs with
bf16 units (AMX-BF16, AVX512-BF16), else fp32, the choice printed and kept
in result.json. Weights, optimizer state and checkpoints stay fp32.

Augmentation on top of the data set's crop and flip (docs/data.md):
--randaugment N,M (torchvision's RandAugment: N of its 14 ops at magnitude
bin M of 31, signs drawn, e.g. 2,9) or --trivialaugment (TrivialAugmentWide),
and --random-erasing P (torchvision's RandomErasing(value=0) after
normalisation: a box of 2–33 % of the image, aspect ratio 0.3–3.3, set to the
channel mean). They run on the uint8 images in the data workers, drawn per
example from the run seed, epoch and example, and are recorded in
result.json and the run's identity. --mixup A and --cutmix A mix each
training batch with itself mirrored, λ ~ Beta(A, A) per batch, the targets
mixed alike (timm's Mixup; with both, either per batch, ½ each:
--mix-switch-prob; --mix-prob mixes only some batches), drawn from the run
seed, epoch and step.

Model selection: --val-fraction F holds out a class-stratified, seeded part
of the training set; every epoch reports its validation figures, the epoch
with the best --select metric (top1, top5 or loss; of the moving average with
--ema-decay) is kept (model-best.safetensors), --patience N stops early, and
the test set is evaluated once, on the selected weights (--test-every-epoch
also every epoch). The final figures and result.json's "selection" say which
epoch's weights they are of.`
}
