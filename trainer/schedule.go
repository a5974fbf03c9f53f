package trainer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/trainer/models"
)

// Schedule is a learning-rate schedule over epochs with linear warm-up.
type Schedule struct {
	Kind       string  // "constant", "step", "multistep" or "cosine"
	LR         float64 // base learning rate
	Gamma      float64 // step/multistep factor
	StepSize   int     // step: decay every StepSize epochs
	Milestones []int   // multistep: decay at these epochs
	Warmup     int     // epochs of linear warm-up from LR/(steps of warm-up) to LR
	// WarmupStart > 0 is the rate the warm-up starts from instead
	// (timm's warmup_lr; torchvision's lr_warmup_decay·LR).
	WarmupStart float64
	MinLR       float64 // cosine floor
}

// At is the learning rate at epoch e (0-based) and fraction f ∈ [0,1) of
// it, for a stage of epochs epochs. Warm-up ramps linearly per step from
// LR·(1/steps) to LR over Warmup epochs; the decay is then applied on the
// epoch count (cosine per step, over the epochs after warm-up).
func (s Schedule) At(e int, f float64, epochs int) float64 {
	t := float64(e) + f
	if s.Warmup > 0 && t < float64(s.Warmup) {
		if s.WarmupStart > 0 {
			return s.WarmupStart + (s.LR-s.WarmupStart)*t/float64(s.Warmup)
		}
		return s.LR * math.Max(t/float64(s.Warmup), 1e-3)
	}
	switch s.Kind {
	case "step":
		if s.StepSize > 0 {
			return s.LR * math.Pow(s.Gamma, float64(e/s.StepSize))
		}
	case "multistep":
		n := 0
		for _, m := range s.Milestones {
			if e >= m {
				n++
			}
		}
		return s.LR * math.Pow(s.Gamma, float64(n))
	case "cosine":
		span := float64(epochs - s.Warmup)
		if span <= 0 {
			return s.LR
		}
		p := math.Min((t-float64(s.Warmup))/span, 1)
		return s.MinLR + 0.5*(s.LR-s.MinLR)*(1+math.Cos(math.Pi*p))
	}
	return s.LR
}

// ScheduleKinds are the learning-rate schedules (Schedule.Kind).
var ScheduleKinds = []string{"constant", "step", "multistep", "cosine"}

// ParseMilestones parses "60,120,160".
func ParseMilestones(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("milestones %q: want positive epochs like 60,120,160", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Optim is the optimisation protocol of a run.
type Optim struct {
	Epochs      int
	Batch       int
	Momentum    float64
	Nesterov    bool
	WeightDecay float64
	Schedule    Schedule
	// Optimizer is one of Optimizers ("" is sgd); Params are its
	// parameters other than Momentum, Nesterov and WeightDecay, by name
	// (absent: the default). An optimizer without momentum refuses one.
	Optimizer string
	Params    map[string]float64
	// ClipNorm > 0 scales each peer's gradients to an L2 norm of at most
	// ClipNorm before every update (torch.nn.utils.clip_grad_norm_).
	ClipNorm float64
	// EMADecay > 0 keeps an exponential moving average of every peer's
	// weights, updated after every step (timm's ModelEmaV2: e ← d·e +
	// (1−d)·w over parameters and buffers), evaluated every epoch and saved
	// beside the model.
	EMADecay float64
}

// Preset is a named protocol of the original papers.
type Preset struct {
	Name string
	Doc  string
	Optim
	// WorkerBatch, when > 0, makes the default batch WorkerBatch per
	// data-parallel process (Optim.Batch is then for one process).
	WorkerBatch int
	// RefBatch, when > 0, scales the learning rate linearly with the batch:
	// Schedule.LR is the rate for RefBatch examples (Goyal et al. 2017).
	RefBatch int
	// Flags are lcl train flags a recipe preset sets besides the
	// optimisation, by name and value as on the command line (augmentation
	// and mixing: "trivialaugment": "true", "mixup": "0.2"); a flag the
	// run gives wins (experiment.TrainSpec.ApplyPresetFlags).
	Flags map[string]string
}

// For returns the preset's optimisation for a run of world data-parallel
// processes: the batch is WorkerBatch·world unless batchSet (the user gave
// one), and the learning rate follows the batch linearly unless lrSet. b is
// the batch the user gave when batchSet.
func (p Preset) For(world int, batchSet bool, b int, lrSet bool) Optim {
	o := p.Optim
	o.Schedule.Milestones = append([]int(nil), o.Schedule.Milestones...)
	o.Params = maps.Clone(o.Params)
	if batchSet {
		o.Batch = b
	} else if p.WorkerBatch > 0 {
		o.Batch = p.WorkerBatch * max(world, 1)
	}
	if p.RefBatch > 0 && !lrSet {
		o.Schedule.LR = p.Schedule.LR * float64(o.Batch) / float64(p.RefBatch)
	}
	return o
}

// Presets returns the named protocols, sorted by name: each architecture's
// own (the paper trained every architecture with the protocol of its
// publication) and a few general ones.
func Presets() []Preset {
	p := []Preset{
		{"cifar-resnet", "ResNet on CIFAR (He et al.): 164 epochs, lr 0.1 ×0.1 at 82/123, wd 1e-4, batch 128",
			Optim{Epochs: 164, Batch: 128, Momentum: 0.9, Nesterov: false, WeightDecay: 1e-4, Schedule: Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{82, 123}}}, 0, 0, nil},
		{"densenet-cifar", "DenseNet on CIFAR (Huang et al. 2017): 300 epochs, batch 64, lr 0.1 ×0.1 at 150/225, wd 1e-4, Nesterov",
			Optim{Epochs: 300, Batch: 64, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4, Schedule: Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{150, 225}}}, 0, 0, nil},
		{"densenet-imagenet", "DenseNet on ImageNet (Huang et al. 2017): 90 epochs, batch 256, lr 0.1 ×0.1 at 30/60, wd 1e-4, Nesterov",
			Optim{Epochs: 90, Batch: 256, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4, Schedule: Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{30, 60}}}, 0, 0, nil},
		{"dml-cifar", "DML (Zhang et al.): 200 epochs, lr 0.1 ×0.1 at 60/120/180, wd 5e-4, batch 64, Nesterov",
			Optim{Epochs: 200, Batch: 64, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, Schedule: Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{60, 120, 180}}}, 0, 0, nil},
		{"fmnist-cnn", "small CNN/MLP on (Fashion-)MNIST: 20 epochs, lr 0.05 cosine, wd 5e-4, batch 128, Nesterov",
			Optim{Epochs: 20, Batch: 128, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, Schedule: Schedule{Kind: "cosine", LR: 0.05}}, 0, 0, nil},
		{"goyal", "large-batch SGD (Goyal et al. 2017): 90 epochs, batch 32 per process, lr 0.1×batch/256 after 5 epochs of linear warm-up, ×0.1 at 30/60/80, wd 1e-4",
			Optim{Epochs: 90, Batch: 32, Momentum: 0.9, Nesterov: false, WeightDecay: 1e-4, Schedule: Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{30, 60, 80}, Warmup: 5}}, 32, 256, nil},
		{"imagenet-resnet", "ResNet on ImageNet (torchvision): 90 epochs, lr 0.1 ×0.1 every 30, wd 1e-4, batch 256",
			Optim{Epochs: 90, Batch: 256, Momentum: 0.9, Nesterov: false, WeightDecay: 1e-4, Schedule: Schedule{Kind: "step", LR: 0.1, Gamma: 0.1, StepSize: 30}}, 0, 0, nil},
		{"resnext-imagenet", "ResNeXt on ImageNet (Xie et al. 2017, fb.resnet.torch schedule): 100 epochs, batch 256, lr 0.1 divided by 10 three times (every 30 epochs), wd 1e-4",
			Optim{Epochs: 100, Batch: 256, Momentum: 0.9, Nesterov: false, WeightDecay: 1e-4, Schedule: Schedule{Kind: "step", LR: 0.1, Gamma: 0.1, StepSize: 30}}, 0, 0, nil},
		{"inception-resnet-v2", "Inception-ResNet-v2 (Szegedy et al. 2017): TensorFlow's RMSProp (decay 0.9, ε 1.0, momentum 0.9), lr 0.045 ×0.94 every 2 epochs, batch 32, wd 4e-5 (on every parameter; TF-Slim spares biases and batch norm), 100 epochs (the paper gives none)",
			Optim{Epochs: 100, Batch: 32, Momentum: 0.9, WeightDecay: 4e-5, Schedule: Schedule{Kind: "step", LR: 0.045, Gamma: 0.94, StepSize: 2},
				Optimizer: "rmsprop", Params: map[string]float64{"decay": 0.9, "eps": 1}}, 0, 0, nil},
		{"senet-imagenet", "SENet on ImageNet (Hu et al. 2018): 100 epochs, batch 1024, lr 0.6×batch/1024 ×0.1 every 30, wd 1e-4",
			Optim{Epochs: 100, Batch: 1024, Momentum: 0.9, Nesterov: false, WeightDecay: 1e-4, Schedule: Schedule{Kind: "step", LR: 0.6, Gamma: 0.1, StepSize: 30}}, 0, 1024, nil},
		{"wrn-cifar", "Wide ResNet (Zagoruyko & Komodakis): 200 epochs, lr 0.1 ×0.2 at 60/120/160, wd 5e-4, batch 128, Nesterov",
			Optim{Epochs: 200, Batch: 128, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, Schedule: Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.2, Milestones: []int{60, 120, 160}}}, 0, 0, nil},
		// The modern recipes (issue 30): the optimisation of today's
		// recipes with their augmentation and mixing, for running every
		// method under the paper's recipe and a modern one.
		{Name: "cifar-modern", Doc: "a modern CIFAR recipe: 200 epochs, batch 128, SGD Nesterov lr 0.1 cosine after 5 epochs of linear warm-up (Goyal et al. 2017), wd 5e-4 (WRN), EMA 0.9998 per step (timm's default), TrivialAugmentWide (Müller & Hutter 2021), random erasing 0.5 (Zhong et al. 2020 on CIFAR), mixup α 1 (Zhang et al. 2018 on CIFAR) or CutMix α 1 (Yun et al. 2019 on CIFAR), ½ each (timm)",
			Optim: Optim{Epochs: 200, Batch: 128, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, EMADecay: 0.9998,
				Schedule: Schedule{Kind: "cosine", LR: 0.1, Warmup: 5}},
			Flags: map[string]string{"trivialaugment": "true", "random-erasing": "0.5", "mixup": "1", "cutmix": "1"}},
		{Name: "imagenet-modern", Doc: "torchvision's 2021 ImageNet recipe (Vryniotis 2021, \"How to train state-of-the-art models using TorchVision's latest primitives\"): 600 epochs, batch 128 per process, lr 0.5×batch/1024 cosine after 5 epochs of linear warm-up, wd 2e-5, EMA 0.99997 per step (its 0.99998 every 32 steps, adjusted as it does), TrivialAugmentWide, random erasing 0.1, mixup α 0.2 or CutMix α 1, ½ each; its label smoothing 0.1 is --strategy ls (not part of the preset), its 176-pixel training crops, norm-layer wd 0 and repeated-augment sampler are not reproduced",
			Optim: Optim{Epochs: 600, Batch: 128, Momentum: 0.9, WeightDecay: 2e-5, EMADecay: 0.99997,
				Schedule: Schedule{Kind: "cosine", LR: 0.5, Warmup: 5}},
			WorkerBatch: 128, RefBatch: 1024,
			Flags: map[string]string{"trivialaugment": "true", "random-erasing": "0.1", "mixup": "0.2", "cutmix": "1"}},
	}
	// By name: how lcl models lists them.
	slices.SortFunc(p, func(a, b Preset) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// PresetByName finds a preset; an unknown name is an error naming the
// presets.
func PresetByName(name string) (Preset, error) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	names := PresetNames()
	return Preset{}, fmt.Errorf("unknown preset %q%s (known: %s)", name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
}

// PresetNames lists the presets by name.
func PresetNames() []string {
	var names []string
	for _, p := range Presets() {
		names = append(names, p.Name)
	}
	return names
}

// DefaultPreset is the preset used when none is named: the one the model's
// architecture registers (models.Model's Preset, by input size where a
// family has CIFAR and ImageNet variants); an unknown model is an error.
func DefaultPreset(model string, in models.Input) (string, error) {
	return models.Builtin().DefaultPreset(model, in)
}
