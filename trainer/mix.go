package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/lcl-project/lcl/trainer/torch"
)

// Mixing is a run's mixup (Zhang et al. 2018) and CutMix (Yun et al. 2019),
// as timm's Mixup draws them in its "batch" mode: one λ per batch, each
// example mixed with the batch's example at the mirrored position, the
// loss λ·loss(labels) + (1−λ)·loss(those of the mirrored examples), so that
// for every strategy the target is the mix of the two examples' targets
// (soft rows, label smoothing's, LCL's). The zero value mixes nothing.
type Mixing struct {
	// Mixup is α of mixup's λ ~ Beta(α, α) (0: no mixup; timm's recipes
	// use 0.8, 0.2 on CIFAR).
	Mixup float64
	// CutMix is α of CutMix's λ ~ Beta(α, α) (0: no CutMix; timm's
	// recipes use 1.0).
	CutMix float64
	// Prob is the probability that a batch is mixed at all (timm's
	// mix_prob; 0 stands for 1, timm's default).
	Prob float64
	// Switch is, with both, the probability that a mixed batch uses CutMix
	// rather than mixup (timm's switch_prob; 0 stands for ½, timm's
	// default).
	Switch float64
}

// On reports whether the run mixes batches.
func (m Mixing) On() bool { return m.Mixup > 0 || m.CutMix > 0 }

// prob and switchProb are Prob and Switch with their defaults.
func (m Mixing) prob() float64 {
	if m.Prob == 0 {
		return 1
	}
	return m.Prob
}
func (m Mixing) switchProb() float64 {
	if m.Switch == 0 {
		return 0.5
	}
	return m.Switch
}

// Check rejects negative or non-finite α and probabilities outside [0,1].
func (m Mixing) Check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"--mixup", m.Mixup}, {"--cutmix", m.CutMix}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s %v: want α ≥ 0 (0: off)", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"--mix-prob", m.Prob}, {"--mix-switch-prob", m.Switch}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("%s %v: want a probability 0 < P ≤ 1", f.name, f.v)
		}
	}
	if m.Prob != 0 && !m.On() {
		return fmt.Errorf("--mix-prob without --mixup or --cutmix: nothing to mix")
	}
	// The switch chooses between the two: with one of them it does nothing.
	if m.Switch != 0 && !(m.Mixup > 0 && m.CutMix > 0) {
		return fmt.Errorf("--mix-switch-prob without both --mixup and --cutmix: it picks CutMix or mixup for a mixed batch, so give both, or drop --mix-switch-prob")
	}
	return nil
}

// String is the mixing as the run's identity and result.json record it
// ("mixup=0.8 cutmix=1"; "" for none).
func (m Mixing) String() string {
	var parts []string
	if m.Mixup > 0 {
		parts = append(parts, "mixup="+strconv.FormatFloat(m.Mixup, 'g', -1, 64))
	}
	if m.CutMix > 0 {
		parts = append(parts, "cutmix="+strconv.FormatFloat(m.CutMix, 'g', -1, 64))
	}
	// The probabilities are named only when they are not timm's defaults,
	// so that runs with the defaults keep one identity however asked for.
	if len(parts) > 0 && m.prob() != 1 {
		parts = append(parts, "prob="+strconv.FormatFloat(m.prob(), 'g', -1, 64))
	}
	if m.Mixup > 0 && m.CutMix > 0 && m.switchProb() != 0.5 {
		parts = append(parts, "switch="+strconv.FormatFloat(m.switchProb(), 'g', -1, 64))
	}
	return strings.Join(parts, " ")
}

// draw is one batch's mixing for h×w images, from rng (nil when the batch
// is not mixed: not drawn to be, or λ came out 1). The order of draws is
// timm's (_params_per_batch, then rand_bbox): whether to mix, the switch, λ,
// the box centre's row, its column.
func (m Mixing) draw(rng *rand.Rand, h, w int) *torch.Mix {
	if !m.On() || rng.Float64() >= m.prob() {
		return nil
	}
	cut := m.CutMix > 0 && (m.Mixup <= 0 || rng.Float64() < m.switchProb())
	alpha := m.Mixup
	if cut {
		alpha = m.CutMix
	}
	lam := distuv.Beta{Alpha: alpha, Beta: alpha, Src: rng}.Rand()
	if !cut {
		if lam >= 1 {
			return nil
		}
		return &torch.Mix{Lam: lam}
	}
	y0, y1, x0, x1 := cutmixBox(rng, lam, h, w)
	// λ corrected to the box's area once clipped (timm's correct_lam).
	lam = 1 - float64((y1-y0)*(x1-x0))/float64(h*w)
	if lam >= 1 {
		return nil
	}
	return &torch.Mix{Lam: lam, Y0: y0, Y1: y1, X0: x0, X1: x1}
}

// cutmixBox is timm's rand_bbox: a box of about (1−λ) of the image's area,
// sides √(1−λ)·h by √(1−λ)·w, centred on a uniformly drawn pixel and
// clipped to the image, as rows [y0,y1) and columns [x0,x1).
func cutmixBox(rng *rand.Rand, lam float64, h, w int) (y0, y1, x0, x1 int) {
	ratio := math.Sqrt(1 - lam)
	ch, cw := int(float64(h)*ratio), int(float64(w)*ratio)
	cy, cx := rng.IntN(h), rng.IntN(w)
	clip := func(v, hi int) int { return min(max(v, 0), hi) }
	return clip(cy-ch/2, h), clip(cy+ch/2, h), clip(cx-cw/2, w), clip(cx+cw/2, w)
}
