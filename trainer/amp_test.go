package trainer

import (
	"math"
	"testing"
)

// The update rule of torch.cuda.amp.GradScaler (PyTorch's
// _amp_update_scale_ kernel, aten/src/ATen/native/cuda/AmpKernels.cu),
// derived by hand for each case: a non-finite step multiplies the scale by
// the backoff factor and resets the tracker; growth_interval finite steps in
// a row multiply it by the growth factor (only if the result is finite) and
// reset the tracker.
func TestGradScalerUpdate(t *testing.T) {
	type step struct {
		inf        bool
		wantScale  float32
		wantTracks int
	}
	for _, c := range []struct {
		name  string
		start GradScaler
		steps []step
	}{
		{"defaults start at 2^16", *NewGradScaler(), []step{{false, 65536, 1}, {true, 32768, 0}, {true, 16384, 0}, {false, 16384, 1}}},
		{"growth after interval good steps", GradScaler{Scale: 8, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 3},
			[]step{{false, 8, 1}, {false, 8, 2}, {false, 16, 0}, {false, 16, 1}, {false, 16, 2}, {false, 32, 0}}},
		{"an inf resets the count", GradScaler{Scale: 8, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 3},
			[]step{{false, 8, 1}, {false, 8, 2}, {true, 4, 0}, {false, 4, 1}, {false, 4, 2}, {false, 8, 0}}},
		{"no growth past float32", GradScaler{Scale: math.MaxFloat32 / 1.5, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 1},
			[]step{{false, math.MaxFloat32 / 1.5, 0}}},
		{"other factors", GradScaler{Scale: 1000, GrowthFactor: 4, BackoffFactor: 0.25, GrowthInterval: 2},
			[]step{{true, 250, 0}, {false, 250, 1}, {false, 1000, 0}}},
	} {
		s := c.start
		for i, st := range c.steps {
			s.Update(st.inf)
			if s.Scale != st.wantScale || s.GrowthTracker != st.wantTracks {
				t.Errorf("%s: step %d (inf=%v): scale %v tracker %d, want %v and %d", c.name, i+1, st.inf,
					s.Scale, s.GrowthTracker, st.wantScale, st.wantTracks)
			}
		}
	}
}
