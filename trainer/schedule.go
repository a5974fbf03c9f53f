package trainer

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Schedule is a learning-rate schedule over epochs with linear warm-up.
type Schedule struct {
	Kind       string  // "constant", "step", "multistep" or "cosine"
	LR         float64 // base learning rate
	Gamma      float64 // step/multistep factor
	StepSize   int     // step: decay every StepSize epochs
	Milestones []int   // multistep: decay at these epochs
	Warmup     int     // epochs of linear warm-up from LR/(steps of warm-up) to LR
	MinLR      float64 // cosine floor
}

// At is the learning rate at epoch e (0-based) and fraction f ∈ [0,1) of
// it, for a stage of epochs epochs. Warm-up ramps linearly per step from
// LR·(1/steps) to LR over Warmup epochs; the decay is then applied on the
// epoch count (cosine per step, over the epochs after warm-up).
func (s Schedule) At(e int, f float64, epochs int) float64 {
	t := float64(e) + f
	if s.Warmup > 0 && t < float64(s.Warmup) {
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

// Validate checks the schedule's fields for its kind.
func (s Schedule) Validate() error {
	if s.LR <= 0 || math.IsNaN(s.LR) {
		return fmt.Errorf("schedule: learning rate %v: want > 0", s.LR)
	}
	if s.Warmup < 0 {
		return fmt.Errorf("schedule: warm-up %d: want ≥ 0", s.Warmup)
	}
	switch s.Kind {
	case "constant", "cosine":
	case "step":
		if s.StepSize <= 0 || s.Gamma <= 0 {
			return fmt.Errorf("schedule: step needs a step size > 0 and gamma > 0 (have %d, %v)", s.StepSize, s.Gamma)
		}
	case "multistep":
		if len(s.Milestones) == 0 || s.Gamma <= 0 || !slices.IsSorted(s.Milestones) {
			return fmt.Errorf("schedule: multistep needs increasing milestones and gamma > 0 (have %v, %v)", s.Milestones, s.Gamma)
		}
	default:
		return fmt.Errorf("schedule: unknown kind %q (want constant, step, multistep or cosine)", s.Kind)
	}
	return nil
}

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
}

// For returns the preset's optimisation for a run of world data-parallel
// processes: the batch is WorkerBatch·world unless batchSet (the user gave
// one), and the learning rate follows the batch linearly unless lrSet. b is
// the batch the user gave when batchSet.
func (p Preset) For(world int, batchSet bool, b int, lrSet bool) Optim {
	o := p.Optim
	o.Schedule.Milestones = append([]int(nil), o.Schedule.Milestones...)
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

// Presets returns the named protocols, sorted by name.
func Presets() []Preset {
	return []Preset{
		{"cifar-resnet", "ResNet on CIFAR (He et al.): 164 epochs, lr 0.1 ×0.1 at 82/123, wd 1e-4, batch 128",
			Optim{164, 128, 0.9, false, 1e-4, Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{82, 123}}}, 0, 0},
		{"dml-cifar", "DML (Zhang et al.): 200 epochs, lr 0.1 ×0.1 at 60/120/180, wd 5e-4, batch 64, Nesterov",
			Optim{200, 64, 0.9, true, 5e-4, Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{60, 120, 180}}}, 0, 0},
		{"fmnist-cnn", "small CNN/MLP on (Fashion-)MNIST: 20 epochs, lr 0.05 cosine, wd 5e-4, batch 128, Nesterov",
			Optim{20, 128, 0.9, true, 5e-4, Schedule{Kind: "cosine", LR: 0.05}}, 0, 0},
		{"goyal", "large-batch SGD (Goyal et al. 2017): 90 epochs, batch 32 per process, lr 0.1×batch/256 after 5 epochs of linear warm-up, ×0.1 at 30/60/80, wd 1e-4",
			Optim{90, 32, 0.9, false, 1e-4, Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{30, 60, 80}, Warmup: 5}}, 32, 256},
		{"imagenet-resnet", "ResNet on ImageNet (torchvision): 90 epochs, lr 0.1 ×0.1 every 30, wd 1e-4, batch 256",
			Optim{90, 256, 0.9, false, 1e-4, Schedule{Kind: "step", LR: 0.1, Gamma: 0.1, StepSize: 30}}, 0, 0},
		{"wrn-cifar", "Wide ResNet (Zagoruyko & Komodakis): 200 epochs, lr 0.1 ×0.2 at 60/120/160, wd 5e-4, batch 128, Nesterov",
			Optim{200, 128, 0.9, true, 5e-4, Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.2, Milestones: []int{60, 120, 160}}}, 0, 0},
	}
}

// PresetByName finds a preset.
func PresetByName(name string) (Preset, error) {
	var names []string
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Preset{}, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(names, ", "))
}

// DefaultPreset is the preset used when none is named: by model family and
// input size.
func DefaultPreset(model string, h int) string {
	switch {
	case strings.HasPrefix(model, "wrn"):
		return "wrn-cifar"
	case strings.HasPrefix(model, "resnet") && h > 64:
		return "imagenet-resnet"
	case strings.HasPrefix(model, "resnet"):
		return "cifar-resnet"
	}
	return "fmnist-cnn"
}
