package strategy

import (
	"context"
	"fmt"
	"math"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// MBMSoft is the soft labels of Bertinetto et al. (CVPR 2020, "Making
// Better Mistakes"), as fiveai/making-better-mistakes' make_all_soft_labels
// makes them: every example of class c is trained on
//
//	y_c[j] = exp(−β·d(c,j)/D) / Σ_k exp(−β·d(c,k)/D)
//
// for the whole run, with d(c,j) = 1 − s(c,j) and D the largest d of the
// matrix. On the lca source's height form, s = 1 − h(LCA)/H, so d/D =
// h(LCA)/max h: the paper's LCA height divided by its largest value over
// the label set's class pairs (not by the graph's height H). Any other
// similarity is turned into a distance the same way.
type MBMSoft struct {
	base
	targets *sdk.Matrix
}

var mbmParams = []sdk.Param{
	{Name: "beta", Type: sdk.ParamFloat, Default: "10", Help: "hardness β > 0: y_c[j] ∝ exp(−β·d(c,j)/max d), d = 1 − s (the LCA height on lca --form height)"},
}

func (s *MBMSoft) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "mbm-soft", Version: Version,
		Summary: "MBM soft labels (Bertinetto et al. 2020): CE against y_c[j] ∝ exp(−β·d(c,j)/max d), d = 1 − s",
		Params:  mbmParams, MaxPeers: 1, Stages: []string{"train"}, NeedsSimilarity: true}, nil
}

func (s *MBMSoft) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, mbmParams); err != nil {
		return nil, err
	}
	beta := s.params.Float("beta")
	if !(beta > 0) || math.IsInf(beta, 1) {
		return nil, fmt.Errorf("beta = %g, want a finite value > 0", beta)
	}
	if run.Similarity == nil {
		return nil, fmt.Errorf("mbm-soft needs a similarity matrix (--source, e.g. an lca matrix of form height, or --matrix)")
	}
	targets, err := MBMSoftTargets(run.Similarity, len(run.Classes), beta)
	if err != nil {
		return nil, fmt.Errorf("similarity matrix: %w", err)
	}
	s.targets = targets
	s.stages = oneStage("train", run.Epochs, 1)
	return s.stagesRead()
}

func (s *MBMSoft) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	return &sdk.Plan{Targets: s.targets, Coefs: sdk.Coefs{SoftCE: 1}}, nil
}

// MBMSoftTargets returns MBM's soft labels for the C×C similarity s and
// hardness beta (see MBMSoft), each row computed in float64 and rounded
// once, as it is sent (a Fill matrix over s: a 21,843-class plan is never
// held whole). s must be finite with no value above 1 (a distance 1 − s
// below 0 has no meaning for MBM), and not all 1 (then every distance is 0
// and max d cannot normalise them).
func MBMSoftTargets(s *sdk.Matrix, c int, beta float64) (*sdk.Matrix, error) {
	if err := sdk.ValidateSimilarity(s, c); err != nil {
		return nil, err
	}
	row := make([]float32, c)
	dmax := 0.0 // D, the largest distance; the diagonal counts, as in MBM's torch.max
	for i := 0; i < c; i++ {
		for j, v := range s.RowInto(i, row) {
			if v > 1 {
				return nil, fmt.Errorf("s[%d][%d] = %g is above 1; mbm-soft's distance 1 − s would be negative", i, j, v)
			}
			dmax = max(dmax, 1-float64(v))
		}
	}
	if dmax == 0 {
		return nil, fmt.Errorf("every similarity is 1, so every distance 1 − s is 0 and there is no max d to normalise by")
	}
	// Per row the smallest scaled distance m and Σ_k exp(−β·(d_k/D − m)):
	// shifting by m changes no ratio and keeps the largest term at 1, so a
	// large β cannot underflow a whole row to 0.
	shift, sum := make([]float64, c), make([]float64, c)
	for i := 0; i < c; i++ {
		r := s.RowInto(i, row)
		m := math.Inf(1)
		for _, v := range r {
			m = min(m, (1-float64(v))/dmax)
		}
		total := 0.0
		for _, v := range r {
			total += math.Exp(-beta * ((1-float64(v))/dmax - m))
		}
		shift[i], sum[i] = m, total
	}
	return sdk.NewRowMatrix(c, c, func(i int, dst []float32) {
		src := s.RowInto(i, dst) // may be dst itself: each entry is read before it is written
		m, total := shift[i], sum[i]
		for j, v := range src {
			dst[j] = float32(math.Exp(-beta*((1-float64(v))/dmax-m)) / total)
		}
	}), nil
}
