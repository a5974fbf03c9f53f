package strategy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// CN is CurriculumNet (Guo et al. 2018).
//
// Stage "pretrain" trains one model on all data (sl). The host then streams
// every training example's features; per class, Densities and
// DensitySubsets split the examples into clean / noisy / very noisy. Stage
// "curriculum" trains a fresh model easy → hard in three phases whose
// lengths are the shares of its epochs: clean only; clean + noisy; all. The
// later subsets get weight `weight` (0.5), clean examples 1.
//
// Choices the paper leaves open, all parameters: the curriculum starts from
// fresh weights (continue=true keeps the pretrained model); the pretrain
// stage is as long as a plain run (pretrain-epochs); phases get equal thirds
// (shares=1,1,1); no PCA is applied (the trainer sends penultimate-layer
// features as they are); see Densities and DensitySubsets for the cutoff
// index and k-means initialisation.
type CN struct {
	base
	rank []int // per example: Clean, Noisy or VeryNoisy; nil until features arrive
	dim  int
	// weight and pct are the parameters weight and density-percentile.
	weight, pct float64
	// phaseEnd[k] is the first curriculum epoch after phase k.
	phaseEnd []int
}

var cnParams = []sdk.Param{
	{Name: "pretrain-epochs", Type: sdk.ParamInt, Default: "0", Help: "epochs of the pretrain stage (0: as many as the run)"},
	{Name: "shares", Type: sdk.ParamFloats, Default: "1,1,1", Help: "relative lengths of the phases clean / +noisy / +very noisy"},
	{Name: "weight", Type: sdk.ParamFloat, Default: "0.5", Help: "loss weight of noisy and very noisy examples"},
	{Name: "density-percentile", Type: sdk.ParamFloat, Default: "0.6", Help: "cutoff d_c as a fraction of the sorted pairwise distances"},
	{Name: "continue", Type: sdk.ParamBool, Default: "false", Help: "start the curriculum from the pretrained model instead of fresh weights"},
}

func (s *CN) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "cn", Version: Version,
		Summary: "CurriculumNet: density clustering of features per class, then clean → noisy → very noisy",
		Params:  cnParams, MaxPeers: 1, Stages: []string{"pretrain", "curriculum"}}, nil
}

func (s *CN) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, cnParams); err != nil {
		return nil, err
	}
	pe := s.params.Int("pretrain-epochs")
	if pe < 0 {
		return nil, fmt.Errorf("pretrain-epochs = %d, want ≥ 0", pe)
	}
	if pe == 0 {
		pe = run.Epochs
	}
	shares := s.params.Floats("shares")
	if len(shares) != 3 {
		return nil, fmt.Errorf("shares: %d values, want 3 (clean, +noisy, +very noisy)", len(shares))
	}
	total := 0.0
	for _, x := range shares {
		if x < 0 || math.IsNaN(x) {
			return nil, fmt.Errorf("shares: %g, want values ≥ 0", x)
		}
		total += x
	}
	if total == 0 {
		return nil, fmt.Errorf("shares are all 0")
	}
	if s.weight = s.params.Float("weight"); s.weight < 0 {
		return nil, fmt.Errorf("weight = %g, want ≥ 0", s.weight)
	}
	if s.pct = s.params.Float("density-percentile"); !(s.pct > 0 && s.pct < 1) {
		return nil, fmt.Errorf("density-percentile = %g, want a value in (0,1)", s.pct)
	}
	s.phaseEnd = phaseEnds(run.Epochs, shares)
	s.rank = nil
	s.stages = []sdk.Stage{
		{Name: "pretrain", Epochs: pe, Peers: 1, Teacher: -1, Fresh: true, Features: true},
		{Name: "curriculum", Epochs: run.Epochs, Peers: 1, Teacher: -1, Fresh: !s.params.Bool("continue")},
	}
	return s.stagesRead()
}

// phaseEnds splits epochs by cumulative shares, rounding each boundary.
func phaseEnds(epochs int, shares []float64) []int {
	total := 0.0
	for _, x := range shares {
		total += x
	}
	ends := make([]int, len(shares))
	cum := 0.0
	for k, x := range shares {
		cum += x
		ends[k] = int(math.Round(cum / total * float64(epochs)))
	}
	ends[len(ends)-1] = epochs
	return ends
}

// Phase returns the curriculum phase (0, 1, 2) of a curriculum epoch.
func (s *CN) Phase(epoch int) int {
	for k, end := range s.phaseEnd {
		if epoch < end {
			return k
		}
	}
	return len(s.phaseEnd) - 1
}

// Ranks returns each example's subset (Clean, Noisy, VeryNoisy) once the
// features have been received, else nil.
func (s *CN) Ranks() []int { return s.rank }

func (s *CN) Features(ctx context.Context, chunks sdk.FeatureStream) error {
	if s.params == nil {
		return fmt.Errorf("features sent before begin")
	}
	n := s.run.NumExamples
	var x []float32
	seen := make([]bool, n)
	got := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := chunks.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if c.Dim < 1 {
			return fmt.Errorf("feature chunk with dim %d", c.Dim)
		}
		if x == nil {
			s.dim = c.Dim
			x = make([]float32, n*c.Dim)
		}
		if c.Dim != s.dim {
			return fmt.Errorf("feature chunk with dim %d after chunks with dim %d", c.Dim, s.dim)
		}
		if len(c.Data) != len(c.Indices)*c.Dim {
			return fmt.Errorf("feature chunk: %d values for %d examples of dim %d", len(c.Data), len(c.Indices), c.Dim)
		}
		for k, i := range c.Indices {
			if i < 0 || i >= n {
				return fmt.Errorf("feature chunk: example index %d out of range [0,%d)", i, n)
			}
			if seen[i] {
				return fmt.Errorf("feature chunk: example %d sent twice", i)
			}
			seen[i] = true
			got++
			copy(x[i*s.dim:(i+1)*s.dim], c.Data[k*s.dim:(k+1)*s.dim])
		}
	}
	if got != n {
		return fmt.Errorf("features of %d examples received, want all %d", got, n)
	}
	s.rank = SplitByDensity(x, s.dim, s.run.Labels, len(s.run.Classes), s.pct)
	return nil
}

// SplitByDensity applies Densities and DensitySubsets (k=3) class by class
// and returns every example's subset rank.
func SplitByDensity(x []float32, dim int, labels []int, classes int, pct float64) []int {
	members := make([][]int, classes)
	for i, y := range labels {
		members[y] = append(members[y], i)
	}
	rank := make([]int, len(labels))
	for _, idx := range members {
		if len(idx) == 0 {
			continue
		}
		xs := make([]float32, 0, len(idx)*dim)
		for _, i := range idx {
			xs = append(xs, x[i*dim:(i+1)*dim]...)
		}
		rho, _ := Densities(xs, len(idx), dim, pct)
		for k, r := range DensitySubsets(rho, 3) {
			rank[idx[k]] = r
		}
	}
	return rank
}

func (s *CN) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	if at.Stage == 0 {
		return &sdk.Plan{Coefs: sdk.Coefs{SoftCE: 1}}, nil
	}
	if s.rank == nil {
		return nil, fmt.Errorf("the curriculum needs the pretrained model's features, which the host has not sent")
	}
	phase := s.Phase(at.Epoch)
	w := s.weight
	weights := make([]float64, len(s.rank))
	subset := make([]int, 0, len(s.rank))
	for i, r := range s.rank {
		if r > phase {
			continue
		}
		subset = append(subset, i)
		weights[i] = 1
		if r != Clean {
			weights[i] = w
		}
	}
	return &sdk.Plan{Weights: weights, Subset: subset, Coefs: sdk.Coefs{SoftCE: 1}}, nil
}
