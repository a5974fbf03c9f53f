package trainer

import "math"

// GradScaler is the dynamic loss scale of fp16 training, with the update
// rule of PyTorch's torch.cuda.amp.GradScaler (its _amp_update_scale_
// kernel): the loss is multiplied by Scale before the backward pass and the
// gradients divided by it before the update; a step whose gradients hold an
// inf or NaN is skipped and halves the scale (BackoffFactor) and restarts
// the count of good steps; GrowthInterval good steps in a row double it
// (GrowthFactor), unless the doubled scale would overflow float32. The
// scale is a float32, as PyTorch keeps it. It is stored in checkpoints, so
// a resumed run continues with the same scale.
type GradScaler struct {
	Scale          float32 `json:"scale"`
	GrowthFactor   float32 `json:"growth_factor"`
	BackoffFactor  float32 `json:"backoff_factor"`
	GrowthInterval int     `json:"growth_interval"`
	GrowthTracker  int     `json:"growth_tracker"` // good steps since the last change
}

// NewGradScaler returns GradScaler's defaults: scale 2^16, growth 2,
// backoff 0.5, interval 2000.
func NewGradScaler() *GradScaler {
	return &GradScaler{Scale: 65536, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000}
}

// Update applies the rule after a step: foundInf says whether the step's
// gradients held an inf or NaN (and the step was skipped).
func (s *GradScaler) Update(foundInf bool) {
	if foundInf {
		s.Scale *= s.BackoffFactor
		s.GrowthTracker = 0
		return
	}
	s.GrowthTracker++
	if s.GrowthTracker == s.GrowthInterval {
		if g := s.Scale * s.GrowthFactor; !math.IsInf(float64(g), 0) && !math.IsNaN(float64(g)) {
			s.Scale = g
		}
		s.GrowthTracker = 0
	}
}
